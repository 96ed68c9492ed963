// Session limits and default models (GET/PUT /api/admin/settings). Only changed fields are sent;
// a value refused here or by the server is marked on its field with a message naming it. Sizes
// are edited in KiB/MiB/GiB (limit-fields.ts) and sent as exact bytes.
import { useState } from 'preact/hooks';
import { api, call, describeError, isApiError, type Schemas } from '../api/client.ts';
import { sizeToEdit } from '../ui/format.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';
import { LIMIT_FIELDS, limitError, readLimit, type SizeKey, type SizeText } from './limit-fields.ts';
import { CountInput, SizeInput } from './limit-inputs.tsx';
import { useSettingsDraft } from './use-settings-draft.ts';

export function LimitsPanel() {
  const { saved, setSaved, draft, setDraft, error, setError, notice, setNotice } = useSettingsDraft();
  // The hosts textarea keeps its own text while edited, so a blank line being typed is not
  // swallowed; null: show the draft's list.
  const [hostsText, setHostsText] = useState<string | null>(null);
  // Likewise a size field's amount and unit once edited; absent: show the draft's bytes.
  const [sizes, setSizes] = useState<Partial<Record<SizeKey, SizeText>>>({});

  if (draft === null || saved === null)
    return error === null ? <p class="muted">Loading…</p> : <ErrorText message={error.message} />;

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setNotice(null);
    const patch: Schemas['SettingsPatch'] = {};
    for (const f of LIMIT_FIELDS) {
      const read = readLimit(f, draft, f.kind === 'size' ? sizes[f.key] : undefined);
      if ('problem' in read) {
        setError({ message: read.problem, field: f.key });
        document.getElementById(`limit-${f.key}`)?.focus();
        return;
      }
      if (read.value !== saved[f.key]) patch[f.key] = read.value;
    }
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
      setSizes({});
      setNotice('Saved. New limits apply to runners started from now on.');
    } catch (err) {
      setError({
        message: hostError(err, hosts) ?? (isApiError(err) ? limitError(err) : null) ?? describeError(err),
        ...(isApiError(err) && err.field !== undefined && { field: err.field }),
      });
    }
  };

  // The server names the list or one entry of it (`repositoryHosts.1`).
  const hostsInvalid = error?.field?.startsWith('repositoryHosts') === true;
  const limitInvalid = LIMIT_FIELDS.some((f) => f.key === error?.field);
  const errorOf = (key: string) => (error?.field === key ? error.message : null);

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
    <form class="card form-grid limits-form" onSubmit={save} aria-labelledby="limits-title" noValidate>
      <h2 id="limits-title">Session limits and models</h2>
      {LIMIT_FIELDS.map((f) =>
        f.kind === 'size' ? (
          <SizeInput
            key={f.key}
            id={`limit-${f.key}`}
            label={f.label}
            hint={f.hint}
            value={sizes[f.key] ?? sizeToEdit(draft[f.key])}
            error={errorOf(f.key)}
            onChange={(v) => setSizes({ ...sizes, [f.key]: v })}
          />
        ) : (
          <CountInput
            key={f.key}
            id={`limit-${f.key}`}
            label={f.label}
            {...(f.unit !== undefined && { unit: f.unit })}
            hint={f.hint}
            value={draft[f.key]}
            error={errorOf(f.key)}
            onChange={(n) => setDraft({ ...draft, [f.key]: n })}
          />
        ),
      )}
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
      <ErrorText message={hostsInvalid || limitInvalid ? null : (error?.message ?? null)} class="wide-row" />
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
