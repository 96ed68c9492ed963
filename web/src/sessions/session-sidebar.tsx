import { useState } from 'preact/hooks';
import { api, call, describeError } from '../api/client.ts';
import { navigate } from '../router.ts';
import { relativeTime } from '../ui/format.ts';
import { StateBadge } from '../ui/state-badge.tsx';
import { upsertSession, useSessionList } from './session-list-store.ts';
import { ErrorText } from '../ui/messages.tsx';
import { RepositoryStart } from './repository-start.tsx';

export function sessionTitle(s: { title: string | null; createdAt: string }): string {
  return (
    s.title ??
    `Untitled · ${new Date(s.createdAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}`
  );
}

export function SessionSidebar({
  currentId,
  inert = false,
  onNavigate,
}: {
  currentId: string | null;
  /** The phone drawer while closed: off screen, so out of the tab order too. */
  inert?: boolean;
  /** A session link was followed (the current one too, which changes no route). */
  onNavigate?: () => void;
}) {
  const { sessions, error } = useSessionList();
  const [creating, setCreating] = useState(false);
  const [createError, setCreateError] = useState<string | null>(null);

  const create = async () => {
    setCreating(true);
    setCreateError(null);
    try {
      const s = await call(api.POST('/api/sessions', { body: {} }));
      upsertSession(s);
      navigate(`/sessions/${s.id}`);
    } catch (e) {
      setCreateError(describeError(e));
    } finally {
      setCreating(false);
    }
  };

  return (
    // Preact's JSX types lack `inert`; the spread passes it through as the DOM property.
    <nav id="sessions-nav" class="sidebar" aria-label="Sessions" {...{ inert }}>
      <div class="sidebar-head">
        <button type="button" class="btn primary wide" onClick={create} disabled={creating}>
          New session
        </button>
        <ErrorText message={createError} />
        <RepositoryStart />
      </div>
      <ErrorText message={error} />
      {sessions === null ? (
        <p class="muted pad">Loading…</p>
      ) : sessions.length === 0 ? (
        <p class="muted pad">No sessions yet.</p>
      ) : (
        <ul class="session-list">
          {sessions.map((s) => (
            <li key={s.id}>
              <a
                href={`/sessions/${s.id}`}
                class="session-link"
                aria-current={s.id === currentId ? 'page' : undefined}
                onClick={onNavigate}
              >
                <span class="session-title">{sessionTitle(s)}</span>
                <span class="session-meta">
                  <span class="backend-tag">{s.backend}</span>
                  <StateBadge state={s.state} />
                  <time dateTime={s.updatedAt} title={new Date(s.updatedAt).toLocaleString()}>
                    {relativeTime(s.updatedAt)}
                  </time>
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </nav>
  );
}
