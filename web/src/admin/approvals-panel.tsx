// Tool approval settings (GET/PUT /api/admin/settings; DESIGN "Tool approvals"): the mode of new
// sessions, what the policy decides per tool kind without a person, and how long a request waits.
// Only changed fields are sent; a refused value is marked on its field with the server's message.
import { api, call, describeError, isApiError, type Schemas } from '../api/client.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';
import { useSettingsDraft } from './use-settings-draft.ts';

type Settings = Schemas['Settings'];
type Kind = Settings['approvalPolicy']['autoAllow'][number];
type Rule = 'ask' | 'allow' | 'deny';

const KINDS: Array<{ kind: Kind; label: string }> = [
  { kind: 'read', label: 'Read (read, list, search)' },
  { kind: 'write', label: 'Write (write, edit)' },
  { kind: 'shell', label: 'Shell commands' },
  { kind: 'web', label: 'Web (fetch, search)' },
  { kind: 'other', label: 'Other tools' },
];

function ruleOf(s: Settings, kind: Kind): Rule {
  if (s.approvalPolicy.autoDeny.includes(kind)) return 'deny';
  if (s.approvalPolicy.autoAllow.includes(kind)) return 'allow';
  return 'ask';
}

function withRule(s: Settings, kind: Kind, rule: Rule): Settings {
  const autoAllow = s.approvalPolicy.autoAllow.filter((k) => k !== kind);
  const autoDeny = s.approvalPolicy.autoDeny.filter((k) => k !== kind);
  if (rule === 'allow') autoAllow.push(kind);
  if (rule === 'deny') autoDeny.push(kind);
  return { ...s, approvalPolicy: { autoAllow, autoDeny } };
}

const same = (a: Settings['approvalPolicy'], b: Settings['approvalPolicy']) =>
  [...a.autoAllow].sort().join() === [...b.autoAllow].sort().join() &&
  [...a.autoDeny].sort().join() === [...b.autoDeny].sort().join();

export function ApprovalsPanel() {
  const { saved, setSaved, draft, setDraft, error, setError, notice, setNotice } = useSettingsDraft();

  if (draft === null || saved === null)
    return error === null ? <p class="muted">Loading…</p> : <ErrorText message={error.message} />;

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setNotice(null);
    const patch: Schemas['SettingsPatch'] = {};
    if (draft.defaultApprovals !== saved.defaultApprovals) patch.defaultApprovals = draft.defaultApprovals;
    if (draft.approvalTimeoutSeconds !== saved.approvalTimeoutSeconds)
      patch.approvalTimeoutSeconds = draft.approvalTimeoutSeconds;
    if (!same(draft.approvalPolicy, saved.approvalPolicy)) patch.approvalPolicy = draft.approvalPolicy;
    if (Object.keys(patch).length === 0) {
      setNotice('Nothing changed.');
      return;
    }
    try {
      const s = await call(api.PUT('/api/admin/settings', { body: patch }));
      setSaved(s);
      setDraft(s);
      setNotice(
        'Saved. The mode applies to sessions created from now on; the policy and timeout to messages sent from now on.',
      );
    } catch (err) {
      setError({
        message: describeError(err),
        ...(isApiError(err) && err.field !== undefined && { field: err.field }),
      });
    }
  };

  return (
    <form class="card form-grid" onSubmit={save} aria-labelledby="approvals-title" noValidate>
      <h2 id="approvals-title">Tool approvals</h2>
      <label title="sessions created without choosing a mode get this one">
        New sessions
        <select
          value={draft.defaultApprovals}
          onChange={(e) => setDraft({ ...draft, defaultApprovals: e.currentTarget.value === 'ask' ? 'ask' : 'auto' })}
        >
          <option value="auto">Run tools</option>
          <option value="ask">Ask first</option>
        </select>
      </label>
      <label title="a request nobody answers is denied after this long">
        Approval timeout (seconds)
        <input
          type="number"
          min={5}
          inputMode="numeric"
          value={draft.approvalTimeoutSeconds}
          aria-invalid={error?.field === 'approvalTimeoutSeconds' ? true : undefined}
          onInput={(e) => setDraft({ ...draft, approvalTimeoutSeconds: e.currentTarget.valueAsNumber })}
        />
      </label>
      {KINDS.map(({ kind, label }) => (
        <label key={kind} title="in sessions that ask: decided by the policy, or by a person">
          {label}
          <select
            value={ruleOf(draft, kind)}
            aria-invalid={error?.field?.startsWith('approvalPolicy') ? true : undefined}
            onChange={(e) => setDraft(withRule(draft, kind, e.currentTarget.value as Rule))}
          >
            <option value="ask">Ask a person</option>
            <option value="allow">Always allow</option>
            <option value="deny">Always deny</option>
          </select>
        </label>
      ))}
      <div class="form-actions">
        <button type="submit" class="btn primary">
          Save approvals
        </button>
      </div>
      <ErrorText message={error?.message ?? null} class="wide-row" />
      <Notice message={notice} class="wide-row" />
    </form>
  );
}
