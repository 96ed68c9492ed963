// A list paged by a keyset cursor (ids newest first) that is also refreshed while shown. A refresh
// walks the pages again from the top down to as far as the person had loaded, so the rows "Load
// more" added stay (up to date) instead of falling back to the first page, and a row is never
// listed twice. Loads run one after another on the list the previous one left, so a refresh cannot
// undo a "Load more" that finished while it was on the way.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../api/client.ts';
import type { Page } from '../ui/paged-list.ts';

/** The most rows the API gives in one page. */
const MAX_LIMIT = 200;

interface Loaded<T> {
  rows: T[];
  /** Where the next page starts; null: everything is loaded. */
  cursor: string | null;
}

export function useRefreshedPages<T extends { id: string }>(
  fetchPage: (cursor: string | null, limit: number) => Promise<Page<T>>,
  pageSize: number,
  deps: unknown[],
) {
  const [loaded, setLoaded] = useState<Loaded<T> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const current = useRef<Loaded<T> | null>(null);
  const queue = useRef<Promise<void>>(Promise.resolve());
  // Bumped when `deps` change: loads queued for the old list are dropped.
  const generation = useRef(0);
  const refreshQueued = useRef(false);

  const run = (load: (now: Loaded<T> | null) => Promise<Loaded<T>>) => {
    const gen = generation.current;
    queue.current = queue.current.then(async () => {
      if (gen !== generation.current) return;
      try {
        const next = await load(current.current);
        if (gen !== generation.current) return;
        current.current = next;
        setLoaded(next);
        setError(null);
      } catch (e) {
        if (gen === generation.current) setError(describeError(e));
      }
    });
    return queue.current;
  };

  const first = async (): Promise<Loaded<T>> => {
    const page = await fetchPage(null, pageSize);
    return { rows: page.rows, cursor: page.nextCursor };
  };

  const more = () =>
    run(async (now) => {
      if (now === null) return first();
      if (now.cursor === null) return now;
      const page = await fetchPage(now.cursor, pageSize);
      const known = new Set(now.rows.map((r) => r.id));
      return { rows: [...now.rows, ...page.rows.filter((r) => !known.has(r.id))], cursor: page.nextCursor };
    });

  const refresh = () => {
    // A slow server must not pile refreshes up behind each other.
    if (refreshQueued.current) return queue.current;
    refreshQueued.current = true;
    return run(async (now) => {
      refreshQueued.current = false;
      return now === null ? first() : walk(now, fetchPage, pageSize);
    });
  };

  useEffect(() => {
    generation.current += 1;
    current.current = null;
    refreshQueued.current = false;
    setLoaded(null);
    void run(first);
  }, deps);

  return { rows: loaded?.rows ?? null, error, hasMore: loaded?.cursor != null, more, refresh };
}

/** The pages from the top again, down to the last row loaded before (ids sort as they are paged). */
async function walk<T extends { id: string }>(
  before: Loaded<T>,
  fetchPage: (cursor: string | null, limit: number) => Promise<Page<T>>,
  pageSize: number,
): Promise<Loaded<T>> {
  const end = before.cursor;
  const limit = Math.min(MAX_LIMIT, Math.max(pageSize, before.rows.length));
  const rows: T[] = [];
  let cursor: string | null = null;
  do {
    const page = await fetchPage(cursor, limit);
    rows.push(...page.rows);
    cursor = page.nextCursor;
  } while (cursor !== null && (end === null || cursor > end));
  if (end === null || (cursor === null && rows.every((r) => r.id >= end))) return { rows, cursor };
  // Keep to where the person had loaded: the rows past it are the next "Load more"'s.
  return { rows: rows.filter((r) => r.id >= end), cursor: end };
}
