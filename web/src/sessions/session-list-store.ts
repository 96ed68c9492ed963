// The signed-in person's session list, shared by the sidebar and the chat page (a rename or a
// state change on one shows on the other). The API pages it newest first by id (a ULID, so by
// creation); the list holds the newest sessions down to `nextCursor` and grows a page at a time
// on request. A refresh (on demand, on focus, every 15 s) reloads that whole range, so a state
// change or a deletion shows however far down the session is. Once nothing shows it (signed out,
// or on a page without the sidebar) it is forgotten: whoever signs in next in this tab starts
// from their own first page.
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';

type SessionSummary = Schemas['Session'];

/** Sessions the first load and each "Show older sessions" bring. */
const PAGE = 50;
/** The API's largest page: a refresh of a long list costs as few requests as it can. */
const REFRESH_PAGE = 200;

export interface ListState {
  /** Newest first; null until the first page arrives. */
  sessions: SessionSummary[] | null;
  /** Where the next older page starts (the oldest listed id); null once every session is listed. */
  nextCursor: string | null;
  /** Why the last load or refresh failed; cleared by the next one that succeeds. */
  error: string | null;
  loadingMore: boolean;
  /** Why the last request for older sessions failed. */
  moreError: string | null;
}

const UNLOADED: ListState = { sessions: null, nextCursor: null, error: null, loadingMore: false, moreError: null };
let state = UNLOADED;
const subscribers = new Set<(s: ListState) => void>();

function publish(next: ListState): void {
  state = next;
  for (const s of subscribers) s(state);
}

// Loads run one at a time: a refresh replaces the list a page load extends, and neither may
// publish over the other's newer answer. One queued before the list was forgotten publishes nothing.
let queue: Promise<void> = Promise.resolve();
let refreshWaiting = false;
let generation = 0;

function enqueue(op: (stale: () => boolean) => Promise<void>): Promise<void> {
  const queuedIn = generation;
  const run = () => op(() => queuedIn !== generation);
  queue = queue.then(run, run);
  return queue;
}

function forget(): void {
  generation++;
  refreshWaiting = false;
  state = UNLOADED;
}

/** A change the page made itself, kept while a refresh is under way to apply to its answer too. */
type Edit = (list: SessionSummary[], nextCursor: string | null) => SessionSummary[];
let edits: Edit[] | null = null;

function edit(change: Edit): void {
  edits?.push(change);
  if (state.sessions !== null) publish({ ...state, sessions: change(state.sessions, state.nextCursor) });
}

/** Reloads every listed session (the first page if none is yet); requests made meanwhile share one. */
export function refreshSessions(): Promise<void> {
  if (refreshWaiting) return queue;
  refreshWaiting = true;
  return enqueue(async (stale) => {
    if (stale()) return;
    refreshWaiting = false;
    edits = [];
    try {
      const fresh = state.sessions === null ? await firstPage() : await newestThrough(state.nextCursor);
      if (stale()) return;
      const sessions = edits.reduce((list, change) => change(list, fresh.nextCursor), fresh.sessions);
      publish({ ...state, sessions, nextCursor: fresh.nextCursor, error: null });
    } catch (e) {
      if (!stale()) publish({ ...state, error: describeError(e) });
    } finally {
      edits = null;
    }
  });
}

/** The person asked again after a failure: the error goes while the list loads. */
export function retrySessions(): Promise<void> {
  publish({ ...state, error: null });
  return refreshSessions();
}

/** Appends the next older page. */
export function loadOlderSessions(): Promise<void> {
  if (state.nextCursor === null || state.loadingMore) return queue;
  publish({ ...state, loadingMore: true, moreError: null });
  return enqueue(async (stale) => {
    if (stale()) return;
    // A refresh that ran first may have found the end of the list.
    const cursor = state.nextCursor;
    if (cursor === null) return publish({ ...state, loadingMore: false });
    try {
      const page = await call(api.GET('/api/sessions', { params: { query: { limit: PAGE, cursor } } }));
      if (stale()) return;
      const listed = new Set((state.sessions ?? []).map((s) => s.id));
      const older = page.sessions.filter((s) => !listed.has(s.id));
      publish({
        ...state,
        sessions: [...(state.sessions ?? []), ...older],
        nextCursor: page.nextCursor,
        loadingMore: false,
      });
    } catch (e) {
      if (!stale()) publish({ ...state, loadingMore: false, moreError: describeError(e) });
    }
  });
}

async function firstPage(): Promise<{ sessions: SessionSummary[]; nextCursor: string | null }> {
  return call(api.GET('/api/sessions', { params: { query: { limit: PAGE } } }));
}

/** Every session from the newest down to `oldest` (all of them when null). */
async function newestThrough(
  oldest: string | null,
): Promise<{ sessions: SessionSummary[]; nextCursor: string | null }> {
  const sessions: SessionSummary[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await call(
      api.GET('/api/sessions', {
        params: { query: { limit: REFRESH_PAGE, ...(cursor !== undefined && { cursor }) } },
      }),
    );
    for (const s of page.sessions) {
      // Past the listed range: there are older sessions, and the next page still starts here.
      if (oldest !== null && s.id < oldest) return { sessions, nextCursor: oldest };
      sessions.push(s);
    }
    if (page.nextCursor === null) return { sessions, nextCursor: null };
    cursor = page.nextCursor;
  }
}

/**
 * Applies a change the page already knows about without waiting for the next refresh. A session
 * older than the listed range stays out: it shows when its page is loaded.
 */
export function upsertSession(s: SessionSummary): void {
  edit((list, nextCursor) => {
    const listed = list.find((x) => x.id === s.id);
    // A refresh may already hold a later state of it than this page does.
    if (listed !== undefined) return listed.updatedAt > s.updatedAt ? list : list.map((x) => (x === listed ? s : x));
    if (nextCursor !== null && s.id < nextCursor) return list;
    const at = list.findIndex((x) => x.id < s.id);
    return at === -1 ? [...list, s] : [...list.slice(0, at), s, ...list.slice(at)];
  });
}

export function removeSession(id: string): void {
  edit((list) => list.filter((s) => s.id !== id));
}

export function useSessionList(): ListState {
  const [s, set] = useState(state);
  useEffect(() => {
    subscribers.add(set);
    if (subscribers.size === 1) void refreshSessions();
    const onFocus = () => void refreshSessions();
    addEventListener('focus', onFocus);
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refreshSessions();
    }, 15_000);
    return () => {
      subscribers.delete(set);
      if (subscribers.size === 0) forget();
      removeEventListener('focus', onFocus);
      clearInterval(timer);
    };
  }, []);
  return s;
}
