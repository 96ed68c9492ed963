import { useState } from 'preact/hooks';
import { api, call, isApiError, type ApiError } from '../api/client.ts';
import { inSeconds } from '../ui/format.ts';
import type { Me } from './me.ts';
import { ErrorText } from '../ui/messages.tsx';

function message(e: unknown): string {
  if (!isApiError(e)) return 'Sign-in failed; try again.';
  const err: ApiError = e;
  if (err.status === 401) return 'Wrong username or password.';
  if (err.status === 429) {
    return err.retryAfterSeconds !== undefined
      ? `Too many failed attempts. Try again in ${inSeconds(err.retryAfterSeconds)}.`
      : 'Too many failed attempts. Try again later.';
  }
  return err.message;
}

export function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // The cookie the server sets is the credential; the token in the body is not kept.
      const r = await call(api.POST('/api/auth/login', { body: { username, password } }));
      setPassword('');
      onSignedIn(r.user);
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <form class="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <div class="brand-mark" aria-hidden="true" />
        <h1 id="signin-title">Sign in to Switchyard</h1>
        <label>
          Username
          <input
            name="username"
            autocomplete="username"
            required
            autoFocus
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <ErrorText message={error} />
        <button type="submit" class="btn primary wide" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
