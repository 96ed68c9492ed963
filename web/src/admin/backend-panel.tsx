// The backend for new sessions: each backend's availability from the probe (with the reason and
// the fix when one is unusable) and the switch. A refused switch shows the server's 400 as is.
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';
import { relativeTime } from '../ui/format.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';

type PublicSettings = Schemas['PublicSettings'];

export function BackendPanel() {
  const [status, setStatus] = useState<PublicSettings | null>(null);
  const [choice, setChoice] = useState<PublicSettings['llmBackend']>('claude');
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);

  const load = () =>
    call(api.GET('/api/settings'))
      .then((s) => {
        setStatus(s);
        setChoice(s.llmBackend);
      })
      .catch((e: unknown) => setError(describeError(e)));
  useEffect(() => void load(), []);

  const save = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    setError(null);
    setNotice(null);
    try {
      const s = await call(api.PUT('/api/admin/settings', { body: { llmBackend: choice } }));
      setNotice(`New sessions now use ${s.llmBackend}. Existing sessions keep their backend.`);
      await load();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <div>
      {status === null ? (
        <p class="muted">Checking backends…</p>
      ) : (
        <>
          <ul class="backend-cards">
            {status.backends.map((b) => (
              <li key={b.name} class={`card backend-card ${b.available ? 'ok' : 'bad'}`}>
                <div class="backend-card-head">
                  <strong>{b.name}</strong>
                  {b.name === status.llmBackend && <span class="badge state-busy">current</span>}
                  <span class={`badge ${b.available ? 'state-idle' : 'state-failed'}`}>
                    {b.available ? 'available' : 'unavailable'}
                  </span>
                </div>
                {b.version !== undefined && <p class="muted">version {b.version}</p>}
                <p class="muted">{b.checkedAt === null ? 'not probed yet' : `checked ${relativeTime(b.checkedAt)}`}</p>
                {b.reason !== undefined && <p>Reason: {b.reason}</p>}
                {b.fix !== undefined && <p>To fix: {b.fix}</p>}
              </li>
            ))}
          </ul>
          <form class="card form-inline" onSubmit={save}>
            <label for="backend-select">Backend</label>
            <select
              id="backend-select"
              value={choice}
              onChange={(e) => setChoice(e.currentTarget.value as PublicSettings['llmBackend'])}
            >
              {status.backends.map((b) => (
                <option key={b.name} value={b.name}>
                  {b.name}
                </option>
              ))}
            </select>
            <button type="submit" class="btn primary" disabled={saving}>
              {saving ? 'Checking…' : 'Save'}
            </button>
            <span class="muted">Switching to pi first checks that pi can run; new sessions only.</span>
          </form>
        </>
      )}
      <ErrorText message={error} />
      <Notice message={notice} />
    </div>
  );
}
