// "Start from repository": a new session whose workspace begins as a clone of a git repository
// (the runner clones it before the first turn; the Changes view then shows what the agent changed
// relative to it). The server decides which hosts may be cloned; its refusal names
// `repository.url` or `repository.ref`, shown beside that field.
import { useState } from 'preact/hooks';
import { api, call, describeError, isApiError } from '../api/client.ts';
import { navigate } from '../router.ts';
import { upsertSession } from './session-list-store.ts';

type Field = 'url' | 'ref';

export function RepositoryStart() {
  const [url, setUrl] = useState('');
  const [ref, setRef] = useState('');
  const [busy, setBusy] = useState(false);
  const [fieldError, setFieldError] = useState<{ field: Field; message: string } | null>(null);
  const [error, setError] = useState<string | null>(null);

  const start = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFieldError(null);
    setError(null);
    try {
      const repository = { url: url.trim(), ...(ref.trim() !== '' && { ref: ref.trim() }) };
      const s = await call(api.POST('/api/sessions', { body: { repository } }));
      upsertSession(s);
      setUrl('');
      setRef('');
      navigate(`/sessions/${s.id}`);
    } catch (err) {
      const field = isApiError(err) ? err.field : undefined;
      if (isApiError(err) && (field === 'repository.url' || field === 'repository.ref')) {
        // Beside the field, the field's name is already on screen.
        setFieldError({
          field: field === 'repository.url' ? 'url' : 'ref',
          message: err.message.replace(`${field}: `, ''),
        });
      } else setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const invalid = (f: Field) => fieldError?.field === f;
  const message = (f: Field) =>
    invalid(f) ? (
      <span id={`repo-${f}-error`} class="field-error" role="alert">
        {fieldError?.message}
      </span>
    ) : null;

  return (
    <details class="repo-start">
      <summary>Start from repository…</summary>
      <form onSubmit={start}>
        <label>
          Repository URL
          <input
            type="url"
            required
            value={url}
            placeholder="https://git.example.org/team/project.git"
            aria-invalid={invalid('url')}
            aria-describedby={invalid('url') ? 'repo-url-error' : undefined}
            onInput={(e) => setUrl((e.currentTarget as HTMLInputElement).value)}
          />
          {message('url')}
        </label>
        <label>
          <span>
            Branch, tag or commit <span class="muted">(optional)</span>
          </span>
          <input
            value={ref}
            placeholder="default branch"
            aria-invalid={invalid('ref')}
            aria-describedby={invalid('ref') ? 'repo-ref-error' : undefined}
            onInput={(e) => setRef((e.currentTarget as HTMLInputElement).value)}
          />
          {message('ref')}
        </label>
        <button type="submit" class="btn small wide" disabled={busy || url.trim() === ''}>
          New session from repository
        </button>
        {error !== null && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
      </form>
    </details>
  );
}
