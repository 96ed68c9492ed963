// Session limits and default models (GET/PUT /api/admin/settings). Only changed fields are sent;
// a refused value is marked on its field with the server's message.
import { api, call, describeError, isApiError, type Schemas } from '../api/client.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';
import { useSettingsDraft } from './use-settings-draft.ts';

type NumberField =
  | 'sessionIdleMinutes'
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
    if (Object.keys(patch).length === 0) {
      setNotice('Nothing changed.');
      return;
    }
    try {
      const s = await call(api.PUT('/api/admin/settings', { body: patch }));
      setSaved(s);
      setDraft(s);
      setNotice('Saved. New limits apply to runners started from now on.');
    } catch (err) {
      setError({
        message: describeError(err),
        ...(isApiError(err) && err.field !== undefined && { field: err.field }),
      });
    }
  };

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
      <div class="form-actions">
        <button type="submit" class="btn primary">
          Save limits
        </button>
      </div>
      <ErrorText message={error?.message ?? null} class="wide-row" />
      <Notice message={notice} class="wide-row" />
    </form>
  );
}
