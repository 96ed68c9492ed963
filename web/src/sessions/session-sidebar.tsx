import { useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';
import { navigate } from '../router.ts';
import { relativeTime } from '../ui/format.ts';
import { StateBadge } from '../ui/state-badge.tsx';
import { loadOlderSessions, retrySessions, upsertSession, useSessionList } from './session-list-store.ts';
import { ErrorText } from '../ui/messages.tsx';
import { RepositoryStart } from './repository-start.tsx';
import './session-sidebar.css';

type SessionSummary = Schemas['Session'];

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
  const { sessions, nextCursor, error, loadingMore, moreError } = useSessionList();
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
      <ListProblem error={error} loaded={sessions !== null} />
      {sessions === null ? (
        error === null && <p class="muted pad">Loading…</p>
      ) : sessions.length === 0 ? (
        <p class="muted pad">No sessions yet.</p>
      ) : (
        <div class="session-scroll">
          <ul class="session-list">
            {sessions.map((s) => (
              <SessionItem key={s.id} session={s} current={s.id === currentId} onNavigate={onNavigate} />
            ))}
          </ul>
          {nextCursor !== null && <OlderSessions loading={loadingMore} error={moreError} />}
        </div>
      )}
    </nav>
  );
}

function SessionItem({
  session: s,
  current,
  onNavigate,
}: {
  session: SessionSummary;
  current: boolean;
  onNavigate: (() => void) | undefined;
}) {
  const title = sessionTitle(s);
  return (
    <li>
      <a
        href={`/sessions/${s.id}`}
        class="session-link"
        aria-current={current ? 'page' : undefined}
        onClick={onNavigate}
      >
        {/* Cut to one line here; the tooltip has all of it. */}
        <span class="session-title" title={title}>
          {title}
        </span>
        <span class="session-meta">
          <span class="backend-tag">{s.backend}</span>
          <StateBadge state={s.state} />
          <time dateTime={s.updatedAt} title={new Date(s.updatedAt).toLocaleString()}>
            {relativeTime(s.updatedAt)}
          </time>
        </span>
      </a>
    </li>
  );
}

/** A failed load or refresh, and the way to ask again. */
function ListProblem({ error, loaded }: { error: string | null; loaded: boolean }) {
  if (error === null) return null;
  return (
    <div class="list-problem">
      <ErrorText
        message={`${loaded ? 'The list could not be refreshed' : 'Your sessions could not be loaded'}: ${error}`}
      />
      <button type="button" class="btn small" onClick={() => void retrySessions()}>
        Retry
      </button>
    </div>
  );
}

/** The end of a list with more behind it. Pressing it again after a failure is the retry. */
function OlderSessions({ loading, error }: { loading: boolean; error: string | null }) {
  return (
    <div class="session-list-more">
      <ErrorText message={error === null ? null : `Older sessions could not be loaded: ${error}`} />
      {/* aria-disabled, not disabled: a disabled button drops the keyboard focus it holds. */}
      <button type="button" class="btn small wide" aria-disabled={loading} onClick={() => void loadOlderSessions()}>
        {loading ? 'Loading…' : 'Show older sessions'}
      </button>
    </div>
  );
}
