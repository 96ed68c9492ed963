import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { User } from '../src/users/schemas.ts';
import {
  adminWithToken,
  call,
  createUser,
  DEFAULT_PASSWORD,
  expectError,
  heldVerifier,
  makeApp,
  tokenFor,
  uniq,
  userWithToken,
} from './helpers.ts';

/** GET /api/admin/users (the route declares this shape inline). */
type UserList = { users: User[] };

async function setup() {
  const { app, clock } = makeApp();
  const admin = await adminWithToken(clock);
  return { app, clock, admin, token: admin.token };
}

async function auditFor(target: string) {
  const { results } = await env.DB.prepare('SELECT * FROM audit_log WHERE target = ? ORDER BY id')
    .bind(target)
    .all<Record<string, unknown>>();
  return results.map((r) => ({
    ...r,
    before: r.before === null ? null : JSON.parse(String(r.before)),
    after: r.after === null ? null : JSON.parse(String(r.after)),
  }));
}

describe('admin gate', () => {
  it('answers 403 "admin access required" to users and 401 to anonymous callers on every admin route', async () => {
    const { app, clock } = await setup();
    const user = await userWithToken(clock);
    const target = await createUser();
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/admin/users'],
      ['POST', '/api/admin/users', { username: uniq(), password: 'long enough password' }],
      ['GET', `/api/admin/users/${target.id}`],
      ['PATCH', `/api/admin/users/${target.id}`, { role: 'admin' }],
      ['DELETE', `/api/admin/users/${target.id}`],
      ['GET', '/api/admin/settings'],
      ['PUT', '/api/admin/settings', { llmBackend: 'claude' }],
      ['GET', '/api/admin/audit'],
    ];
    for (const [method, path, body] of routes) {
      const denied = expectError(await call(app, method, path, { token: user.token, body }), 403, 'forbidden');
      expect(denied.message).toBe('admin access required');
      expectError(await call(app, method, path, { body }), 401, 'unauthenticated');
    }
    // Nothing changed behind the refusals.
    expect(
      (await call<User>(app, 'GET', `/api/admin/users/${target.id}`, { token: (await adminWithToken(clock)).token }))
        .body.role,
    ).toBe('user');
  });
});

describe('POST /api/admin/users', () => {
  it('creates a user who can log in, and audits it without the password', async () => {
    const { app, admin, token } = await setup();
    const username = uniq('new');
    const r = await call<User>(app, 'POST', '/api/admin/users', {
      token,
      body: { username, password: 'a fine long password', currentPassword: DEFAULT_PASSWORD },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ username, role: 'user', disabled: false });
    const login = await call(app, 'POST', '/api/auth/login', { body: { username, password: 'a fine long password' } });
    expect(login.status).toBe(200);
    const audit = await auditFor(`user:${r.body.id}`);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      action: 'user.create',
      actor_id: admin.user.id,
      before: null,
      after: { username, role: 'user', disabled: false },
    });
    expect(JSON.stringify(audit)).not.toContain('a fine long password');
  });

  it('answers 409 for a taken username, case-insensitively', async () => {
    const { app, token } = await setup();
    const existing = await createUser({ username: uniq('Taken') });
    const r = await call(app, 'POST', '/api/admin/users', {
      token,
      body: {
        username: existing.username.toLowerCase(),
        password: 'a fine long password',
        currentPassword: DEFAULT_PASSWORD,
      },
    });
    expect(expectError(r, 409, 'username_taken').field).toBe('username');
  });

  it('answers 400 naming the field', async () => {
    const { app, token } = await setup();
    const bad = async (body: Record<string, unknown>) =>
      expectError(
        await call(app, 'POST', '/api/admin/users', { token, body: { currentPassword: DEFAULT_PASSWORD, ...body } }),
        400,
        'invalid_request',
      ).field;
    expect(await bad({ password: 'a fine long password' })).toBe('username');
    expect(await bad({ username: 'ab', password: 'a fine long password' })).toBe('username');
    expect(await bad({ username: 'has space', password: 'a fine long password' })).toBe('username');
    expect(await bad({ username: uniq(), password: 'short' })).toBe('password');
    expect(await bad({ username: uniq(), password: 'a fine long password', role: 'root' })).toBe('role');
    expect(await bad({ username: uniq(), password: 'a fine long password', isAdmin: true })).toBe('isAdmin');
  });
});

describe('GET /api/admin/users[/:id]', () => {
  it('lists and reads users without password hashes', async () => {
    const { app, token } = await setup();
    const u = await createUser();
    const list = await call<UserList>(app, 'GET', '/api/admin/users', { token });
    expect(list.status).toBe(200);
    expect(list.body.users.map((x: { id: string }) => x.id)).toContain(u.id);
    expect(list.text).not.toContain('pbkdf2');
    const one = await call(app, 'GET', `/api/admin/users/${u.id}`, { token });
    expect(one.body).toMatchObject({ id: u.id, username: u.username, role: 'user', disabled: false });
    expect(one.text).not.toContain('pbkdf2');
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    const { app, token } = await setup();
    expectError(await call(app, 'GET', '/api/admin/users/01J00000000000000000000000', { token }), 404, 'not_found');
    expect(expectError(await call(app, 'GET', '/api/admin/users/nope', { token }), 400).field).toBe('id');
  });
});

describe('PATCH /api/admin/users/:id', () => {
  it('changes the role and audits before/after', async () => {
    const { app, admin, token } = await setup();
    const u = await createUser();
    const r = await call<User>(app, 'PATCH', `/api/admin/users/${u.id}`, {
      token,
      body: { role: 'admin', currentPassword: DEFAULT_PASSWORD },
    });
    expect(r.status).toBe(200);
    expect(r.body.role).toBe('admin');
    const audit = await auditFor(`user:${u.id}`);
    expect(audit.at(-1)).toMatchObject({
      action: 'user.update',
      actor_id: admin.user.id,
      actor_username: admin.user.username,
      before: { role: 'user' },
      after: { role: 'admin' },
    });
  });

  it('resets a password: the old password, login sessions and API tokens stop working, nothing secret is audited', async () => {
    const { app, clock, token } = await setup();
    const u = await createUser();
    const session = await tokenFor(u.id, clock);
    const api = await tokenFor(u.id, clock, { kind: 'api' });
    const r = await call(app, 'PATCH', `/api/admin/users/${u.id}`, {
      token,
      body: { password: 'the brand new password', currentPassword: DEFAULT_PASSWORD },
    });
    expect(r.status).toBe(200);
    expectError(await call(app, 'GET', '/api/me', { token: session }), 401);
    expectError(await call(app, 'GET', '/api/me', { token: api }), 401);
    expectError(
      await call(app, 'POST', '/api/auth/login', {
        body: { username: u.username, password: u.password },
        address: '10.7.0.1',
      }),
      401,
    );
    expect(
      (
        await call(app, 'POST', '/api/auth/login', {
          body: { username: u.username, password: 'the brand new password' },
        })
      ).status,
    ).toBe(200);
    const audit = await auditFor(`user:${u.id}`);
    // The failed login with the old password is audited too (auth.login_failed).
    expect(audit.filter((e) => (e as Record<string, unknown>).action === 'user.update').at(-1)).toMatchObject({
      action: 'user.update',
      after: { passwordChanged: true },
    });
    expect(JSON.stringify(audit)).not.toContain('brand new');
  });

  it('disables a user: their logins and tokens stop working until re-enabled', async () => {
    const { app, clock, token } = await setup();
    const u = await createUser();
    const api = await tokenFor(u.id, clock, { kind: 'api' });
    expect(
      (await call<User>(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { disabled: true } })).body.disabled,
    ).toBe(true);
    expectError(await call(app, 'GET', '/api/me', { token: api }), 401);
    expectError(
      await call(app, 'POST', '/api/auth/login', {
        body: { username: u.username, password: u.password },
        address: '10.7.0.2',
      }),
      401,
    );
    expect(
      (
        await call<User>(app, 'PATCH', `/api/admin/users/${u.id}`, {
          token,
          body: { disabled: false, currentPassword: DEFAULT_PASSWORD },
        })
      ).body.disabled,
    ).toBe(false);
    expect((await call(app, 'GET', '/api/me', { token: api })).status).toBe(200);
  });

  it('answers 409 last_admin rather than demote or disable the only active admin', async () => {
    const { app, clock } = makeApp();
    await env.DB.prepare("UPDATE users SET role = 'user' WHERE role = 'admin'").run();
    const only = await adminWithToken(clock);
    expectError(
      await call(app, 'PATCH', `/api/admin/users/${only.user.id}`, { token: only.token, body: { role: 'user' } }),
      409,
      'last_admin',
    );
    expectError(
      await call(app, 'PATCH', `/api/admin/users/${only.user.id}`, { token: only.token, body: { disabled: true } }),
      409,
      'last_admin',
    );
    expectError(
      await call(app, 'DELETE', `/api/admin/users/${only.user.id}`, { token: only.token }),
      409,
      'last_admin',
    );
    expect(await auditFor(`user:${only.user.id}`)).toEqual([]);
    // With a second admin, the first may step down.
    const second = await adminWithToken(clock);
    expect(
      (await call(app, 'PATCH', `/api/admin/users/${only.user.id}`, { token: second.token, body: { role: 'user' } }))
        .status,
    ).toBe(200);
  });

  it('answers 400, 404 as it should and changes nothing for a no-op', async () => {
    const { app, token } = await setup();
    const u = await createUser();
    expect(expectError(await call(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: {} }), 400).message).toMatch(
      /at least one/,
    );
    expect(
      expectError(await call(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { role: 'god' } }), 400).field,
    ).toBe('role');
    expect(
      expectError(await call(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { username: 'x' } }), 400).field,
    ).toBe('username');
    expectError(
      await call(app, 'PATCH', '/api/admin/users/01J00000000000000000000000', { token, body: { role: 'user' } }),
      404,
    );
    expect((await call(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { role: 'user' } })).status).toBe(200);
    expect(await auditFor(`user:${u.id}`)).toEqual([]);
  });
});

describe('DELETE /api/admin/users/:id', () => {
  it('deletes the user and their tokens, and audits it', async () => {
    const { app, clock, admin, token } = await setup();
    const u = await createUser();
    const api = await tokenFor(u.id, clock, { kind: 'api' });
    expect((await call(app, 'DELETE', `/api/admin/users/${u.id}`, { token })).status).toBe(204);
    expectError(await call(app, 'GET', `/api/admin/users/${u.id}`, { token }), 404);
    expectError(await call(app, 'GET', '/api/me', { token: api }), 401);
    const left = await env.DB.prepare('SELECT COUNT(*) AS n FROM auth_tokens WHERE user_id = ?')
      .bind(u.id)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
    expect((await auditFor(`user:${u.id}`)).at(-1)).toMatchObject({
      action: 'user.delete',
      actor_id: admin.user.id,
      before: { username: u.username },
      after: null,
    });
    expectError(await call(app, 'DELETE', `/api/admin/users/${u.id}`, { token }), 404);
    expect(expectError(await call(app, 'DELETE', '/api/admin/users/bad', { token }), 400).field).toBe('id');
  });
});

describe('granting access needs the acting admin’s login session and password', () => {
  // The attack: a leaked admin API token (or a stolen login cookie) sets a password it knows, on
  // its own account or a new admin's, and then signs in and mints tokens of its own: a credential
  // that outlives the stolen one and a reset of its owner's password.
  async function apiTokenAdmin() {
    const { app, clock } = makeApp();
    const admin = await createUser({ role: 'admin' });
    return { app, clock, admin, apiToken: await tokenFor(admin.id, clock, { kind: 'api' }) };
  }

  const loginWorks = async (app: ReturnType<typeof makeApp>['app'], username: string, password: string) =>
    (await call(app, 'POST', '/api/auth/login', { body: { username, password }, address: '10.8.0.1' })).status === 200;

  it('an admin API token cannot set its own password and sign in with it, even given the password', async () => {
    const { app, admin, apiToken } = await apiTokenAdmin();
    const refused = expectError(
      await call(app, 'PATCH', `/api/admin/users/${admin.id}`, {
        token: apiToken,
        body: { password: 'the thief’s own password', currentPassword: admin.password },
      }),
      403,
      'forbidden',
    );
    expect(refused.message).toBe('setting a password needs a login session, not an API token');
    expect(await loginWorks(app, admin.username, 'the thief’s own password')).toBe(false);
    expect(await loginWorks(app, admin.username, admin.password)).toBe(true);
  });

  it('an admin API token cannot create a user, make an admin or enable an account; nothing changes', async () => {
    const { app, apiToken } = await apiTokenAdmin();
    const username = uniq('made');
    expectError(
      await call(app, 'POST', '/api/admin/users', {
        token: apiToken,
        body: { username, password: 'the thief’s own password', role: 'admin', currentPassword: DEFAULT_PASSWORD },
      }),
      403,
      'forbidden',
    );
    expect(await loginWorks(app, username, 'the thief’s own password')).toBe(false);

    const plain = await createUser();
    expect(
      expectError(
        await call(app, 'PATCH', `/api/admin/users/${plain.id}`, { token: apiToken, body: { role: 'admin' } }),
        403,
        'forbidden',
      ).message,
    ).toBe('making an admin needs a login session, not an API token');
    const disabled = await createUser({ disabled: true });
    expectError(
      await call(app, 'PATCH', `/api/admin/users/${disabled.id}`, { token: apiToken, body: { disabled: false } }),
      403,
      'forbidden',
    );
    const adminToken = (await adminWithToken(makeApp().clock)).token;
    const read = async (id: string) =>
      (await call<User>(app, 'GET', `/api/admin/users/${id}`, { token: adminToken })).body;
    expect((await read(plain.id)).role).toBe('user');
    expect((await read(disabled.id)).disabled).toBe(true);
    expect(await auditFor(`user:${plain.id}`)).toEqual([]);
  });

  it('an admin API token can still take access away: demote and disable', async () => {
    const { app, apiToken } = await apiTokenAdmin();
    const other = await createUser({ role: 'admin' });
    const demoted = await call<User>(app, 'PATCH', `/api/admin/users/${other.id}`, {
      token: apiToken,
      body: { role: 'user' },
    });
    expect(demoted.body.role).toBe('user');
    const disabled = await call<User>(app, 'PATCH', `/api/admin/users/${other.id}`, {
      token: apiToken,
      body: { disabled: true },
    });
    expect(disabled.body.disabled).toBe(true);
  });

  it('a login session must give its password: missing is 400, wrong is 403, both naming currentPassword', async () => {
    const { app, token } = await setup();
    const u = await createUser();
    const missing = expectError(
      await call(app, 'PATCH', `/api/admin/users/${u.id}`, {
        token,
        body: { password: 'the brand new password', role: 'admin' },
      }),
      400,
      'invalid_request',
    );
    expect(missing).toMatchObject({
      field: 'currentPassword',
      message:
        'currentPassword: required for setting a password and making an admin: the password of the signed-in user',
    });
    expect(
      expectError(
        await call(app, 'POST', '/api/admin/users', {
          token,
          body: { username: uniq(), password: 'a fine long password' },
        }),
        400,
        'invalid_request',
      ).field,
    ).toBe('currentPassword');
    const wrong = await call(app, 'PATCH', `/api/admin/users/${u.id}`, {
      token,
      body: { password: 'the brand new password', currentPassword: 'not the admin’s password' },
      address: '10.8.0.2',
    });
    expect(expectError(wrong, 403, 'invalid_credentials').field).toBe('currentPassword');
    expect(await loginWorks(app, u.username, u.password)).toBe(true);
    expect(await auditFor(`user:${u.id}`)).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ action: 'user.update' })]),
    );
  });

  it.each([
    ['creating a user', 'POST'],
    ['setting a password', 'PATCH'],
  ])('%s while the admin’s own password is reset: 401, and nothing was granted', async (_name, method) => {
    const held = heldVerifier();
    const { app: racing, clock } = makeApp({ verifyPassword: held.verify });
    const { app } = makeApp();
    const thief = await createUser({ role: 'admin' });
    const stolen = await tokenFor(thief.id, clock);
    const rescuer = await adminWithToken(clock);
    const target = await createUser();
    const username = uniq('made');
    const grant =
      method === 'POST'
        ? call(racing, 'POST', '/api/admin/users', {
            token: stolen,
            body: { username, password: 'the thief’s own password', role: 'admin', currentPassword: thief.password },
          })
        : call(racing, 'PATCH', `/api/admin/users/${target.id}`, {
            token: stolen,
            body: { password: 'the thief’s own password', currentPassword: thief.password },
          });
    await held.inside;
    const reset = await call(app, 'PATCH', `/api/admin/users/${thief.id}`, {
      token: rescuer.token,
      body: { password: 'the rescuer’s new password', currentPassword: DEFAULT_PASSWORD },
    });
    expect(reset.status).toBe(200);
    held.release();
    expectError(await grant, 401, 'unauthenticated');
    expect(await loginWorks(app, username, 'the thief’s own password')).toBe(false);
    expect(await loginWorks(app, target.username, 'the thief’s own password')).toBe(false);
    expect(await loginWorks(app, target.username, target.password)).toBe(true);
  });
});
