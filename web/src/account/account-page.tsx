// The signed-in person's own account: change the password. The server revokes every sign-in and
// all API tokens when it changes, this page's too, and signs this page in again (a new cookie).
import { useState } from 'preact/hooks';
import { api, call, describeError } from '../api/client.ts';
import { useMe } from '../auth/me.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';

export function AccountPage() {
  const me = useMe();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(false);
    if (next !== repeat) {
      setError('The new passwords do not match.');
      return;
    }
    setError(null);
    try {
      await call(api.POST('/api/me/password', { body: { currentPassword: current, newPassword: next } }));
      setCurrent('');
      setNext('');
      setRepeat('');
      setDone(true);
    } catch (err) {
      setError(describeError(err));
    }
  };

  return (
    <div class="page">
      <h1>Account</h1>
      <p class="muted">
        Signed in as <strong>{me.username}</strong> ({me.role}).
      </p>
      <form class="card form-grid" onSubmit={submit} aria-labelledby="password-title">
        <h2 id="password-title">Change password</h2>
        <label>
          Current password
          <input
            type="password"
            autocomplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autocomplete="new-password"
            required
            minLength={12}
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        </label>
        <label>
          Repeat new password
          <input
            type="password"
            autocomplete="new-password"
            required
            minLength={12}
            value={repeat}
            onInput={(e) => setRepeat(e.currentTarget.value)}
          />
        </label>
        <div class="form-actions">
          <button type="submit" class="btn primary">
            Change password
          </button>
        </div>
      </form>
      <ErrorText message={error} />
      <Notice message={done ? 'Password changed. Your other sign-ins and all your API tokens were revoked.' : null} />
    </div>
  );
}
