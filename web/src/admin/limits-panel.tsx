// Session limits and default models (GET/PUT /api/admin/settings). Only changed fields are sent;
// a refused value is marked on its field with the server's message.
import { useState } from 'preact/hooks';
import { api, call, describeError, isApiError, type Schemas } from '../api/client.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';
import { useSettingsDraft } from './use-settings-draft.ts';

type NumberField =
  | 'sessionIdleMinutes'
  | 'unusedRunnerIdleMinutes'
  | 'sessionMaxMinutes'
  | 'maxMessageBytes'
  | 'maxLiveRunnersPerUser'
  | 'maxLiveRunners'
  | 'workspaceMaxFileBytes'
  | 'workspaceMaxBytes'
  | 'workspaceMaxFiles';

const NUMBER_FIELDS: Array<{ key: NumberField; label: string; hint: string }> = [
  {
    key: 'sessionIdleMinutes',
    label: 'Idle timeout (minutes)',
    hint: 'a runner with no activity this long is stopped',
  },
  {
    key: 'unusedRunnerIdleMinutes',
    label: 'Unused runner timeout (minutes)',
    hint: 'a runner started while someone types, never sent a message, is stopped after this long',
  },
  {
    key: 'sessionMaxMinutes',
    label: 'Maximum session length (minutes)',
    hint: 'a runner is stopped after this long regardless',
  },
  { key: 'maxMessageBytes', label: 'Largest message (bytes)', hint: 'text plus images' },
  { key: 'maxLiveRunnersPerUser', label: 'Runners per user', hint: 'live runners one person may have' },
  { key: 'maxLiveRunners', label: 'Runners in total', hint: 'live runners across everyone' },
  { key: 'workspaceMaxFileBytes', label: 'Largest workspace file (bytes)', hint: 'uploads and what the agent writes' },
  { key: 'workspaceMaxBytes', label: 'Workspace size (bytes)', hint: 'all files of one session together' },
  { key: 'workspaceMaxFiles', label: 'Files per workspace', hint: 'files one session may hold' },
];

export function LimitsPanel() {
  const { saved, setSaved, draft, setDraft, error, setError, notice, setNotice } = useSettingsDraft();
  // The hosts textarea keeps its own text while edited, so a blank line being typed is not
  // swallowed; null: show the draft's list.
  const [hostsText, setHostsText] = useState<string | null>(null);

  if (draft === null || saved === null)
    return error === null ? <p class="muted">Loading…</p> : <ErrorText message={error.message} />;

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setNotice(null);
    const patch: Schemas['SettingsPatch'] = {};
    for (const { key } of NUMBER_FIELDS) if (draft[key] !== saved[key]) patch[key] = draft[key];
    if (draft.defaultModel.claude !== saved.defaultModel.claude || draft.defaultModel.pi !== saved.defaultModel.pi)
      patch.defaultModel = draft.defaultModel;
    const hosts = hostsText === null ? draft.repositoryHosts : parseHosts(hostsText);
    if (hosts.join('\n') !== saved.repositoryHosts.join('\n')) patch.repositoryHosts = hosts;
    if (Object.keys(patch).length === 0) {
      setNotice('Nothing changed.');
      return;
    }
    try {
      const s = await call(api.PUT('/api/admin/settings', { body: patch }));
      setSaved(s);
      setDraft(s);
      setHostsText(null);
      setNotice('Saved. New limits apply to runners started from now on.');
    } catch (err) {
      setError({
        message: hostError(err, hosts) ?? describeError(err),
        ...(isApiError(err) && err.field !== undefined && { field: err.field }),
      });
    }
  };

  // The server names the list or one entry of it (`repositoryHosts.1`).
  const hostsInvalid = error?.field?.startsWith('repositoryHosts') === true;

  const model = (backend: 'claude' | 'pi') => (
    <label>
      Default {backend} model
      <input
        value={draft.defaultModel[backend] ?? ''}
        placeholder="the CLI’s default"
        aria-invalid={error?.field === `defaultModel.${backend}` ? true : undefined}
        onInput={(e) =>
          setDraft({
            ...draft,
            defaultModel: {
              ...draft.defaultModel,
              [backend]: e.currentTarget.value.trim() === '' ? null : e.currentTarget.value.trim(),
            },
          })
        }
      />
    </label>
  );

  return (
    <form class="card form-grid" onSubmit={save} aria-labelledby="limits-title" noValidate>
      <h2 id="limits-title">Session limits and models</h2>
      {NUMBER_FIELDS.map(({ key, label, hint }) => (
        <label key={key} title={hint}>
          {label}
          <input
            type="number"
            min={1}
            inputMode="numeric"
            value={draft[key]}
            aria-invalid={error?.field === key ? true : undefined}
            onInput={(e) => setDraft({ ...draft, [key]: e.currentTarget.valueAsNumber })}
          />
        </label>
      ))}
      {model('claude')}
      {model('pi')}
      <fieldset class="wide-row repo-hosts">
        <legend>Repositories</legend>
        <label>
          <span>
            Repository hosts <span class="muted">(one pattern per line)</span>
          </span>
          <textarea
            rows={4}
            spellcheck={false}
            value={hostsText ?? draft.repositoryHosts.join('\n')}
            aria-describedby={hostsInvalid ? 'repo-hosts-hint repo-hosts-error' : 'repo-hosts-hint'}
            aria-invalid={hostsInvalid ? true : undefined}
            onInput={(e) => setHostsText(e.currentTarget.value)}
          />
          {hostsInvalid && (
            <span id="repo-hosts-error" class="field-error" role="alert">
              {error?.message}
            </span>
          )}
        </label>
        <p id="repo-hosts-hint" class="muted hint">
          Hosts a session may clone from: <code>*</code> any public host, <code>*.example.org</code> its subdomains, or
          a host name such as <code>git.example.org</code>. An empty list turns starting from a repository off.
          Loopback, private and link-local addresses are always refused in production.
        </p>
      </fieldset>
      <div class="form-actions">
        <button type="submit" class="btn primary">
          Save limits
        </button>
      </div>
      <ErrorText message={hostsInvalid ? null : (error?.message ?? null)} class="wide-row" />
      <Notice message={notice} class="wide-row" />
    </form>
  );
}

/** One pattern per line; blank lines and surrounding spaces are not patterns. */
function parseHosts(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** A refused entry (`repositoryHosts.1`) named by its text, which the admin can find in the box, not its index. */
function hostError(err: unknown, hosts: string[]): string | null {
  if (!isApiError(err) || err.field === undefined) return null;
  const m = /^repositoryHosts\.(\d+)$/.exec(err.field);
  const entry = m === null ? undefined : hosts[Number(m[1])];
  if (entry === undefined) return null;
  return `“${entry}”: ${err.message.replace(`${err.field}: `, '')}`;
}
