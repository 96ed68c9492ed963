// Personal API tokens: the secret is shown once, right after creation, with a copy button; the
// list shows names and dates only (the server never returns a secret again).
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';
import { Confirm } from '../ui/confirm.tsx';
import { absoluteTime, relativeTime } from '../ui/format.ts';
import { ErrorText } from '../ui/messages.tsx';

type Token = Schemas['ApiToken'];

export function TokensPage() {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [days, setDays] = useState('90');
  const [password, setPassword] = useState('');
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<Token | null>(null);

  const load = () =>
    call(api.GET('/api/tokens'))
      .then((r) => setTokens(r.tokens))
      .catch((e: unknown) => setError(describeError(e)));
  useEffect(() => void load(), []);

  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setCopied(false);
    try {
      // The server asks for the password again before it mints a credential.
      const r = await call(
        api.POST('/api/tokens', { body: { name, expiresInDays: Number(days), currentPassword: password } }),
      );
      setCreated({ name: r.token.name, secret: r.secret });
      setName('');
      setPassword('');
      await load();
    } catch (err) {
      setError(describeError(err));
    }
  };

  const revoke = async (t: Token) => {
    setRevoking(null);
    try {
      await call(api.DELETE('/api/tokens/{id}', { params: { path: { id: t.id } } }));
      await load();
    } catch (err) {
      setError(describeError(err));
    }
  };

  return (
    <div class="page">
      <h1>API tokens</h1>
      <p class="muted">
        Scripts use a token as <code>Authorization: Bearer …</code>. A token can do what you can, except what needs your
        password: making tokens and, for admins, creating users, setting passwords, making admins and enabling accounts.
        Revoke any you no longer use.
      </p>
      <form class="card form-grid" onSubmit={create} aria-labelledby="new-token-title">
        <h2 id="new-token-title">New token</h2>
        <label>
          Token name
          <input
            required
            maxLength={64}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            placeholder="e.g. ci-script"
          />
        </label>
        <label>
          Expires in
          <select value={days} aria-label="Expires in" onChange={(e) => setDays(e.currentTarget.value)}>
            <option value="7">7 days</option>
            <option value="30">30 days</option>
            <option value="90">90 days</option>
            <option value="365">1 year</option>
          </select>
        </label>
        <label>
          Your current password
          <input
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <div class="form-actions">
          <button type="submit" class="btn primary">
            Create token
          </button>
        </div>
      </form>
      <ErrorText message={error} />
      {created !== null && (
        <div class="card secret-once" role="status">
          <h2>Token “{created.name}” created</h2>
          <p id="token-secret-note">Copy it now: it is shown only once.</p>
          <div class="secret-row">
            <output class="secret" aria-describedby="token-secret-note" aria-label="New token secret">
              {created.secret}
            </output>
            <button
              type="button"
              class="btn small"
              onClick={() => void navigator.clipboard.writeText(created.secret).then(() => setCopied(true))}
            >
              {copied ? 'Copied' : 'Copy token'}
            </button>
            <button type="button" class="btn small" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <h2>Your tokens</h2>
      {tokens === null ? (
        <p class="muted">Loading…</p>
      ) : tokens.length === 0 ? (
        <p class="muted">No API tokens.</p>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr key={t.id}>
                  <td>{t.name}</td>
                  <td title={absoluteTime(t.createdAt)}>{relativeTime(t.createdAt)}</td>
                  <td title={absoluteTime(t.expiresAt)}>{relativeTime(t.expiresAt)}</td>
                  <td>{t.lastUsedAt === null ? 'never' : relativeTime(t.lastUsedAt)}</td>
                  <td class="actions">
                    <button
                      type="button"
                      class="btn small danger-outline"
                      aria-label={`Revoke ${t.name}`}
                      onClick={() => setRevoking(t)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {revoking !== null && (
        <Confirm
          title={`Revoke “${revoking.name}”?`}
          body="Scripts using this token stop working at once."
          confirm="Revoke token"
          danger
          onConfirm={() => void revoke(revoking)}
          onCancel={() => setRevoking(null)}
        />
      )}
    </div>
  );
}
