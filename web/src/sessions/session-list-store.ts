// The signed-in person's session list, shared by the sidebar and the chat page (a rename or a
// state change on one shows on the other). Refreshed on demand, on focus and every 15 s.
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';

type SessionSummary = Schemas['Session'];

interface ListState {
  sessions: SessionSummary[] | null;
  error: string | null;
}

let state: ListState = { sessions: null, error: null };
const subscribers = new Set<(s: ListState) => void>();

function publish(next: ListState): void {
  state = next;
  for (const s of subscribers) s(state);
}

export async function refreshSessions(): Promise<void> {
  try {
    const page = await call(api.GET('/api/sessions', { params: { query: { limit: 200 } } }));
    publish({ sessions: page.sessions, error: null });
  } catch (e) {
    publish({ ...state, error: describeError(e) });
  }
}

/** Applies a change the page already knows about without waiting for the next refresh. */
export function upsertSession(s: SessionSummary): void {
  const list = state.sessions ?? [];
  const i = list.findIndex((x) => x.id === s.id);
  const next = i === -1 ? [s, ...list] : list.map((x) => (x.id === s.id ? s : x));
  publish({ ...state, sessions: next });
}

export function removeSession(id: string): void {
  publish({ ...state, sessions: (state.sessions ?? []).filter((s) => s.id !== id) });
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
      removeEventListener('focus', onFocus);
      clearInterval(timer);
    };
  }, []);
  return s;
}
