// The backend for new sessions: each backend's availability from the probe (with the reason and
// the fix when one is unusable) and the switch. A refused switch shows the server's 400 as is.
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';
import { relativeTime } from '../ui/format.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';

type PublicSettings = Schemas['PublicSettings'];

const PROBE_POLL_MS = 3_000;
/** 5 minutes: longer than a probe may take (a Fargate task; PROBE_TIMEOUT_SECONDS 240 in production). */
const MAX_PROBE_POLLS = 100;

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

  // An admin's read starts the probe of a backend never probed, in the background; ask again until
  // every backend has its answer, so a new deployment's page does not say "not probed" until reloaded.
  const unprobed = status?.backends.some((b) => b.checkedAt === null) === true;
  const [polls, setPolls] = useState(0);
  useEffect(() => {
    if (!unprobed || polls >= MAX_PROBE_POLLS) return;
    const timer = setTimeout(() => void load().then(() => setPolls((n) => n + 1)), PROBE_POLL_MS);
    return () => clearTimeout(timer);
  }, [unprobed, polls]);

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
            {status.backends.map((b) => {
              const probe = probeShown(b, polls < MAX_PROBE_POLLS);
              return (
                <li key={b.name} class={`card backend-card ${probe.card}`}>
                  <div class="backend-card-head">
                    <strong>{b.name}</strong>
                    {b.name === status.llmBackend && <span class="badge state-busy">current</span>}
                    <span class={`badge ${probe.tone}`}>{probe.badge}</span>
                  </div>
                  {b.version !== undefined && <p class="muted">version {b.version}</p>}
                  {probe.line !== null && <p class="muted">{probe.line}</p>}
                  {b.checkedAt !== null && b.reason !== undefined && <p>Reason: {b.reason}</p>}
                  {b.checkedAt !== null && b.fix !== undefined && <p>To fix: {b.fix}</p>}
                </li>
              );
            })}
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

/** How a backend's card shows its probe: one never probed is neither available nor not. */
function probeShown(
  b: PublicSettings['backends'][number],
  polling: boolean,
): { badge: string; tone: string; card: string; line: string | null } {
  if (b.checkedAt === null) {
    return polling
      ? { badge: 'checking', tone: 'state-starting', card: '', line: null }
      : { badge: 'not checked', tone: 'state-stopping', card: '', line: 'no answer yet: reload the page later' };
  }
  const line = `checked ${relativeTime(b.checkedAt)}`;
  return b.available
    ? { badge: 'available', tone: 'state-idle', card: 'ok', line }
    : { badge: 'unavailable', tone: 'state-failed', card: 'bad', line };
}
