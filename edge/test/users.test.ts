import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { User } from '../src/users/schemas.ts';
import { adminWithToken, call, createUser, expectError, makeApp, tokenFor, uniq, userWithToken } from './helpers.ts';

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
      body: { username, password: 'a fine long password' },
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
      body: { username: existing.username.toLowerCase(), password: 'a fine long password' },
    });
    expect(expectError(r, 409, 'username_taken').field).toBe('username');
  });

  it('answers 400 naming the field', async () => {
    const { app, token } = await setup();
    const bad = async (body: unknown) =>
      expectError(await call(app, 'POST', '/api/admin/users', { token, body }), 400, 'invalid_request').field;
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
    const r = await call<User>(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { role: 'admin' } });
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
      body: { password: 'the brand new password' },
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
      (await call<User>(app, 'PATCH', `/api/admin/users/${u.id}`, { token, body: { disabled: false } })).body.disabled,
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
