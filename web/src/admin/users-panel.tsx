import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';
import { useMe } from '../auth/me.ts';
import { Confirm, ConfirmWithPassword } from '../ui/confirm.tsx';
import { relativeTime } from '../ui/format.ts';
import { ErrorText, Notice } from '../ui/messages.tsx';
import { Truncated } from './truncated.tsx';

type User = Schemas['User'];

export function UsersPanel() {
  const me = useMe();
  const [users, setUsers] = useState<User[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [form, setForm] = useState({ username: '', password: '', role: 'user' as User['role'], currentPassword: '' });
  const [resetting, setResetting] = useState<User | null>(null);
  const [promoting, setPromoting] = useState<User | null>(null);
  const [enabling, setEnabling] = useState<User | null>(null);
  const [deleting, setDeleting] = useState<User | null>(null);

  const load = () =>
    call(api.GET('/api/admin/users'))
      .then((r) => setUsers(r.users))
      .catch((e: unknown) => setError(describeError(e)));
  useEffect(() => void load(), []);

  const act = async (what: () => Promise<unknown>, done: string) => {
    setError(null);
    setNotice(null);
    try {
      await what();
      setNotice(done);
      await load();
    } catch (e) {
      setError(describeError(e));
    }
  };

  const create = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      await call(api.POST('/api/admin/users', { body: form }));
      setForm({ username: '', password: '', role: 'user', currentPassword: '' });
    }, `Created ${form.username}.`);
  };
  const patch = (u: User, body: Schemas['UpdateUser']) =>
    call(api.PATCH('/api/admin/users/{id}', { params: { path: { id: u.id } }, body }));
  const update = (u: User, body: Schemas['UpdateUser'], done: string) => act(() => patch(u, body), done);
  /** A change that asks for the admin's password: its dialog shows a refusal and stays open. */
  const confirmed =
    (u: User, body: Schemas['UpdateUser'], done: string, close: () => void) => async (currentPassword: string) => {
      await patch(u, { ...body, currentPassword });
      close();
      setError(null);
      setNotice(done);
      await load();
    };

  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title" class="sr-only">
        Users
      </h2>
      <form class="card form-grid" onSubmit={create} aria-labelledby="new-user-title">
        <h3 id="new-user-title">Add a user</h3>
        <label>
          New username
          <input
            required
            value={form.username}
            autocomplete="off"
            onInput={(e) => setForm({ ...form, username: e.currentTarget.value })}
          />
        </label>
        <label>
          Initial password
          <input
            type="password"
            required
            minLength={12}
            autocomplete="new-password"
            value={form.password}
            onInput={(e) => setForm({ ...form, password: e.currentTarget.value })}
          />
        </label>
        <label>
          Role
          <select
            value={form.role}
            aria-label="Role"
            onChange={(e) => setForm({ ...form, role: e.currentTarget.value as User['role'] })}
          >
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <label>
          Your password
          <input
            type="password"
            required
            autocomplete="current-password"
            value={form.currentPassword}
            onInput={(e) => setForm({ ...form, currentPassword: e.currentTarget.value })}
          />
        </label>
        <div class="form-actions">
          <button type="submit" class="btn primary">
            Add user
          </button>
        </div>
      </form>
      <ErrorText message={error} />
      <Notice message={notice} />
      {users === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => {
                const self = u.id === me.id;
                return (
                  <tr key={u.id}>
                    <td>
                      <span class="name-line">
                        <Truncated text={u.username} />
                        {self && <span class="muted">(you)</span>}
                      </span>
                    </td>
                    <td data-label="Role">
                      <label class="sr-only" for={`role-${u.id}`}>
                        Role of {u.username}
                      </label>
                      <select
                        id={`role-${u.id}`}
                        value={u.role}
                        disabled={self}
                        onChange={(e) =>
                          // Making an admin grants access: the server asks for the password.
                          e.currentTarget.value === 'admin'
                            ? setPromoting(u)
                            : void update(u, { role: 'user' }, `${u.username} is now user.`)
                        }
                      >
                        <option value="user">user</option>
                        <option value="admin">admin</option>
                      </select>
                    </td>
                    <td data-label="Status">
                      {u.disabled ? (
                        <span class="badge state-failed">disabled</span>
                      ) : (
                        <span class="badge state-idle">active</span>
                      )}
                    </td>
                    <td data-label="Created">{relativeTime(u.createdAt)}</td>
                    <td class="actions">
                      <button type="button" class="btn small" onClick={() => setResetting(u)}>
                        Reset password
                      </button>
                      {!self && (
                        <button
                          type="button"
                          class="btn small"
                          onClick={() =>
                            u.disabled
                              ? setEnabling(u)
                              : void update(u, { disabled: true }, `${u.username} is disabled.`)
                          }
                        >
                          {u.disabled ? 'Enable' : 'Disable'}
                        </button>
                      )}
                      {!self && (
                        <button type="button" class="btn small danger-outline" onClick={() => setDeleting(u)}>
                          Delete
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {resetting !== null && (
        <ResetPassword
          user={resetting}
          onCancel={() => setResetting(null)}
          onSave={(password, currentPassword) =>
            confirmed(
              resetting,
              { password },
              `Password of ${resetting.username} reset; their sign-ins and API tokens were revoked.`,
              () => setResetting(null),
            )(currentPassword)
          }
        />
      )}
      {promoting !== null && (
        <ConfirmWithPassword
          title={`Make ${promoting.username} an admin?`}
          body="Admins manage users, settings and the backend, and can read every session."
          confirm="Make admin"
          onConfirm={confirmed(promoting, { role: 'admin' }, `${promoting.username} is now admin.`, () =>
            setPromoting(null),
          )}
          onCancel={() => setPromoting(null)}
        />
      )}
      {enabling !== null && (
        <ConfirmWithPassword
          title={`Enable ${enabling.username}?`}
          body="They can sign in again, and their API tokens work again."
          confirm="Enable"
          onConfirm={confirmed(enabling, { disabled: false }, `${enabling.username} is enabled.`, () =>
            setEnabling(null),
          )}
          onCancel={() => setEnabling(null)}
        />
      )}
      {deleting !== null && (
        <Confirm
          title={`Delete ${deleting.username}?`}
          body="Their sign-ins and tokens stop working at once."
          confirm="Delete user"
          danger
          onConfirm={() => {
            const u = deleting;
            setDeleting(null);
            void act(
              () => call(api.DELETE('/api/admin/users/{id}', { params: { path: { id: u.id } } })),
              `Deleted ${u.username}.`,
            );
          }}
          onCancel={() => setDeleting(null)}
        />
      )}
    </section>
  );
}

function ResetPassword({
  user,
  onSave,
  onCancel,
}: {
  user: User;
  onSave: (password: string, currentPassword: string) => Promise<void>;
  onCancel: () => void;
}) {
  const [password, setPassword] = useState('');
  return (
    <ConfirmWithPassword
      title={`Reset the password of ${user.username}`}
      body="Their sign-ins and API tokens stop working; tell them the new password."
      confirm="Set password"
      onConfirm={(currentPassword) => onSave(password, currentPassword)}
      onCancel={onCancel}
    >
      <label>
        New password
        <input
          type="password"
          required
          minLength={12}
          autoFocus
          autocomplete="new-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </label>
    </ConfirmWithPassword>
  );
}
