import { api, call, type Schemas } from '../api/client.ts';
import { absoluteTime } from '../ui/format.ts';
import { ErrorText } from '../ui/messages.tsx';
import { usePagedList } from '../ui/paged-list.ts';
import { Truncated } from './truncated.tsx';

type Entry = Schemas['AuditEntry'];

function change(e: Entry): string {
  const parts: string[] = [];
  const keys = new Set([...Object.keys(e.before ?? {}), ...Object.keys(e.after ?? {})]);
  for (const k of keys) {
    const b = e.before?.[k];
    const a = e.after?.[k];
    parts.push(
      `${k}: ${b === undefined ? '' : `${JSON.stringify(b)} → `}${a === undefined ? '(removed)' : JSON.stringify(a)}`,
    );
  }
  return parts.join('; ');
}

/** The audit trail, newest first, 50 a page. */
export function AuditPanel() {
  const {
    rows: entries,
    error,
    hasMore,
    more,
  } = usePagedList<Entry>(async (cursor) => {
    const page = await call(
      api.GET('/api/admin/audit', { params: { query: { limit: 50, ...(cursor !== null && { cursor }) } } }),
    );
    return { rows: page.entries, nextCursor: page.nextCursor };
  });

  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title" class="sr-only">
        Audit log
      </h2>
      <ErrorText message={error} />
      {entries === null ? (
        <p class="muted">Loading…</p>
      ) : entries.length === 0 ? (
        <p class="muted">Nothing audited yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id}>
                  <td data-label="When">{absoluteTime(e.at)}</td>
                  <td data-label="Who">
                    <Truncated text={e.actor?.username ?? 'system'} />
                  </td>
                  <td data-label="Action">
                    <code>{e.action}</code>
                  </td>
                  <td data-label="Target" class="mono">
                    {e.target !== null && <Truncated text={e.target} />}
                  </td>
                  <td data-label="Change" class="wrap">
                    {change(e)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {hasMore && (
        <button type="button" class="btn" onClick={() => void more()}>
          Older entries
        </button>
      )}
    </section>
  );
}
