import { useEffect, useState } from 'preact/hooks';
import { describeError } from '../api/client.ts';

export interface Page<T> {
  rows: T[];
  nextCursor: string | null;
}

/**
 * A cursor-paged list (newest first): the first page on mount and whenever `deps` change,
 * `more()` appends the next, `reload()` starts over.
 */
export function usePagedList<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>, deps: unknown[] = []) {
  const [rows, setRows] = useState<T[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async (after: string | null) => {
    try {
      const page = await fetchPage(after);
      setRows((cur) => (after === null ? page.rows : [...(cur ?? []), ...page.rows]));
      setCursor(page.nextCursor);
      setError(null);
    } catch (e) {
      setError(describeError(e));
    }
  };
  useEffect(() => {
    setRows(null);
    void load(null);
  }, deps);
  return { rows, error, hasMore: cursor !== null, more: () => load(cursor), reload: () => load(null) };
}
