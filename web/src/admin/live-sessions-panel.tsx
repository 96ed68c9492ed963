import { useEffect, useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client.ts';
import { sessionTitle } from '../sessions/session-sidebar.tsx';
import { relativeTime } from '../ui/format.ts';
import { ErrorText } from '../ui/messages.tsx';
import { StateBadge } from '../ui/state-badge.tsx';
import { useRefreshedPages } from './refreshed-pages.ts';
import { Truncated } from './truncated.tsx';

type AdminSession = Schemas['AdminSession'];

const PAGE_SIZE = 50;
/** Runner states change under the admin's eyes. */
const REFRESH_MS = 10_000;

/** An ECS task ARN (or a local task id) shortened to its task id's head; the whole ref is the tooltip. */
function shortRef(ref: string): string {
  const id = ref.split('/').pop() ?? ref;
  return id.length > 12 ? `${id.slice(0, 12)}…` : id;
}

/** Sessions across users; each opens read-only for an admin who is not its owner. */
export function LiveSessionsPanel() {
  const [scope, setScope] = useState<'live' | 'all'>('live');
  const { rows, error, hasMore, more, refresh } = useRefreshedPages<AdminSession>(
    async (cursor, limit) => {
      const page = await call(
        api.GET('/api/admin/sessions', {
          params: { query: { state: scope, limit, ...(cursor !== null && { cursor }) } },
        }),
      );
      return { rows: page.sessions, nextCursor: page.nextCursor };
    },
    PAGE_SIZE,
    [scope],
  );
  useEffect(() => {
    const timer = setInterval(() => void refresh(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [scope]);

  return (
    <section aria-labelledby="live-title">
      <div class="panel-head">
        <h2 id="live-title" class="sr-only">
          Sessions across users
        </h2>
        <label>
          Show
          <select value={scope} aria-label="Show" onChange={(e) => setScope(e.currentTarget.value as 'live' | 'all')}>
            <option value="live">sessions with a runner</option>
            <option value="all">all sessions</option>
          </select>
        </label>
      </div>
      <ErrorText message={error} />
      {rows === null ? (
        <p class="muted">Loading…</p>
      ) : rows.length === 0 ? (
        <p class="muted">{scope === 'live' ? 'No session has a runner right now.' : 'No sessions.'}</p>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Owner</th>
                <th scope="col">Backend</th>
                <th scope="col">Runner</th>
                <th scope="col">Last activity</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <tr key={s.id}>
                  <td class="fill">
                    <a href={`/sessions/${s.id}`} class="truncate" title={sessionTitle(s)}>
                      {sessionTitle(s)}
                    </a>
                  </td>
                  <td data-label="Owner">
                    <Truncated text={s.owner.username} />
                  </td>
                  <td data-label="Backend">{s.backend}</td>
                  <td data-label="Runner">
                    <StateBadge state={s.state} />
                    {s.runnerRef !== null && (
                      <span class="muted mono" title={s.runnerRef}>
                        {' '}
                        {shortRef(s.runnerRef)}
                      </span>
                    )}
                  </td>
                  <td data-label="Last activity">{relativeTime(s.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {hasMore && (
        <button type="button" class="btn" onClick={() => void more()}>
          Load more
        </button>
      )}
    </section>
  );
}
