import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { SESSION_TTL_MS } from '../src/auth/tokens.ts';
import { MAX_JSON_BODY_BYTES } from '../src/app.ts';
import { hashPassword } from '../src/auth/password.ts';
import {
  adminWithToken,
  call,
  createUser,
  DEFAULT_PASSWORD,
  expectError,
  heldVerifier,
  type LoginResult,
  makeApp,
  tokenFor,
  uniq,
} from './helpers.ts';

function cookieFrom(setCookie: string | null): string {
  const m = /sy_session=([^;]*)/.exec(setCookie ?? '');
  if (m?.[1] === undefined) throw new Error(`no session cookie in ${setCookie}`);
  return m[1];
}

describe('POST /api/auth/login', () => {
  it('returns user, token and expiry, and sets an HttpOnly SameSite=Lax cookie (not Secure on localhost)', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const r = await call<LoginResult>(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: u.password },
    });
    expect(r.status).toBe(200);
    expect(r.body.user).toEqual({ id: u.id, username: u.username, role: 'user' });
    expect(r.body.token).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    expect(r.body.expiresAt).toBe(new Date(clock.now() + SESSION_TTL_MS).toISOString());
    const setCookie = r.headers.get('Set-Cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).toMatch(/Max-Age=604800/);
    expect(setCookie).not.toMatch(/Secure/);
    expect(cookieFrom(setCookie)).toBe(r.body.token);
    expect(r.headers.get('Cache-Control')).toBe('no-store');
  });

  it('sets a Secure cookie when served over a real host name', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const r = await call(app, 'POST', '/api/auth/login', {
      base: 'https://switchyard.test',
      body: { username: u.username, password: u.password },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('Set-Cookie')).toMatch(/Secure/);
  });

  it('matches usernames case-insensitively', async () => {
    const { app } = makeApp();
    const u = await createUser({ username: uniq('Mixed') });
    const r = await call<LoginResult>(app, 'POST', '/api/auth/login', {
      body: { username: u.username.toUpperCase(), password: u.password },
    });
    expect(r.status).toBe(200);
    expect(r.body.user.username).toBe(u.username);
  });

  it('answers 401 with one generic message for a wrong password, an unknown user and a disabled user', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const d = await createUser({ disabled: true });
    const wrong = await call(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: 'nope' },
      address: '10.0.0.1',
    });
    const unknown = await call(app, 'POST', '/api/auth/login', {
      body: { username: uniq('ghost'), password: 'nope' },
      address: '10.0.0.2',
    });
    const disabled = await call(app, 'POST', '/api/auth/login', {
      body: { username: d.username, password: d.password },
      address: '10.0.0.3',
    });
    const errs = [wrong, unknown, disabled].map((r) => expectError(r, 401, 'invalid_credentials'));
    expect(new Set(errs.map((e) => e.message)).size).toBe(1);
    expect(wrong.headers.get('Set-Cookie')).toBeNull();
  });

  it('answers 400 naming the field for invalid bodies', async () => {
    const { app } = makeApp();
    expect(
      expectError(await call(app, 'POST', '/api/auth/login', { body: { username: 'a' } }), 400, 'invalid_request')
        .field,
    ).toBe('password');
    expect(
      expectError(await call(app, 'POST', '/api/auth/login', { body: { username: 5, password: 'x' } }), 400).field,
    ).toBe('username');
    expect(
      expectError(
        await call(app, 'POST', '/api/auth/login', { body: { username: 'a', password: 'b', admin: true } }),
        400,
      ).field,
    ).toBe('admin');
    expectError(await call(app, 'POST', '/api/auth/login', { body: [1, 2] }), 400, 'invalid_request');
    expectError(await call(app, 'POST', '/api/auth/login', { raw: '{"username":' }), 400, 'invalid_json');
    expectError(await call(app, 'POST', '/api/auth/login'), 400, 'invalid_request');
  });

  it('answers 415 for a non-JSON body and 413 for a huge one', async () => {
    const { app } = makeApp();
    expectError(
      await call(app, 'POST', '/api/auth/login', {
        raw: 'username=a&password=b',
        contentType: 'application/x-www-form-urlencoded',
      }),
      415,
      'unsupported_media_type',
    );
    const big = JSON.stringify({ username: 'a', password: 'x'.repeat(MAX_JSON_BODY_BYTES) });
    expectError(await call(app, 'POST', '/api/auth/login', { raw: big }), 413, 'payload_too_large');
  });

  it('refuses a login posted from a foreign page (login CSRF) but allows no Origin (scripts)', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const body = { username: u.username, password: u.password };
    expectError(
      await call(app, 'POST', '/api/auth/login', { body, origin: 'https://evil.test' }),
      403,
      'csrf_rejected',
    );
    expect((await call(app, 'POST', '/api/auth/login', { body, origin: null })).status).toBe(200);
    expect((await call(app, 'POST', '/api/auth/login', { body, origin: 'http://localhost' })).status).toBe(200);
  });

  it('stores only a hash of the token', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const r = await call<LoginResult>(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: u.password },
    });
    const rows = await env.DB.prepare('SELECT * FROM auth_tokens WHERE user_id = ?').bind(u.id).all();
    expect(rows.results).toHaveLength(1);
    const dump = JSON.stringify(rows.results);
    expect(dump).not.toContain(r.body.token);
    expect(dump).not.toContain(String(r.body.token).slice(3, 20));
  });
});

describe('GET /api/me', () => {
  it('answers the caller by bearer token and by cookie', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const login = await call<LoginResult>(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: u.password },
    });
    const me = { id: u.id, username: u.username, role: 'user' };
    expect((await call(app, 'GET', '/api/me', { token: login.body.token })).body).toEqual(me);
    const cookie = cookieFrom(login.headers.get('Set-Cookie'));
    expect((await call(app, 'GET', '/api/me', { cookie, origin: null })).body).toEqual(me);
  });

  it('answers 401 without credentials, with a malformed or unknown token, and never falls back from a bad bearer to the cookie', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const good = await tokenFor(u.id, clock);
    expectError(await call(app, 'GET', '/api/me'), 401, 'unauthenticated');
    expectError(
      await call(app, 'GET', '/api/me', { headers: { Authorization: 'Basic Zm9vOmJhcg==' } }),
      401,
      'unauthenticated',
    );
    expectError(await call(app, 'GET', '/api/me', { token: `sy_${'A'.repeat(43)}` }), 401, 'unauthenticated');
    expectError(await call(app, 'GET', '/api/me', { token: 'short' }), 401, 'unauthenticated');
    expectError(
      await call(app, 'GET', '/api/me', { token: `sy_${'A'.repeat(43)}`, cookie: good }),
      401,
      'unauthenticated',
    );
    expectError(await call(app, 'GET', '/api/me', { cookie: 'garbage' }), 401, 'unauthenticated');
  });

  it('stops accepting a token at its expiry (clock moved, no sleeping)', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const token = await tokenFor(u.id, clock, { ttlMs: 60_000 });
    expect((await call(app, 'GET', '/api/me', { token })).status).toBe(200);
    clock.advance(59_999);
    expect((await call(app, 'GET', '/api/me', { token })).status).toBe(200);
    clock.advance(1);
    expectError(await call(app, 'GET', '/api/me', { token }), 401, 'unauthenticated');
  });

  it('refuses a token whose stored row has already expired', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const token = await tokenFor(u.id, clock);
    await env.DB.prepare('UPDATE auth_tokens SET expires_at = ? WHERE user_id = ?')
      .bind(clock.now() - 1, u.id)
      .run();
    expectError(await call(app, 'GET', '/api/me', { token }), 401);
  });

  it('refuses tokens of a user disabled after they were issued', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const token = await tokenFor(u.id, clock);
    await env.DB.prepare('UPDATE users SET disabled = 1 WHERE id = ?').bind(u.id).run();
    expectError(await call(app, 'GET', '/api/me', { token }), 401);
  });

  it('records last use at most every five minutes', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const token = await tokenFor(u.id, clock);
    const lastUsed = async () =>
      (
        await env.DB.prepare('SELECT last_used_at FROM auth_tokens WHERE user_id = ?')
          .bind(u.id)
          .first<{ last_used_at: number | null }>()
      )?.last_used_at;
    await call(app, 'GET', '/api/me', { token });
    const first = clock.now();
    expect(await lastUsed()).toBe(first);
    clock.advance(60_000);
    await call(app, 'GET', '/api/me', { token });
    expect(await lastUsed()).toBe(first);
    clock.advance(5 * 60_000);
    await call(app, 'GET', '/api/me', { token });
    expect(await lastUsed()).toBe(clock.now());
  });
});

describe('POST /api/auth/logout', () => {
  it('revokes the bearer token: the next request with it is 401', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const token = await tokenFor(u.id, clock);
    const other = await tokenFor(u.id, clock);
    const r = await call(app, 'POST', '/api/auth/logout', { token });
    expect(r.status).toBe(204);
    expect(r.headers.get('Set-Cookie')).toMatch(/sy_session=;.*Max-Age=0/);
    expectError(await call(app, 'GET', '/api/me', { token }), 401);
    expectError(await call(app, 'POST', '/api/auth/logout', { token }), 401);
    // Only the token used is revoked.
    expect((await call(app, 'GET', '/api/me', { token: other })).status).toBe(200);
  });

  it('revokes the cookie session', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const cookie = await tokenFor(u.id, clock);
    expect((await call(app, 'POST', '/api/auth/logout', { cookie })).status).toBe(204);
    expectError(await call(app, 'GET', '/api/me', { cookie }), 401);
  });

  it('answers 401 without credentials and 403 for a cross-site cookie request', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const cookie = await tokenFor(u.id, clock);
    expectError(await call(app, 'POST', '/api/auth/logout'), 401);
    expectError(
      await call(app, 'POST', '/api/auth/logout', { cookie, origin: 'https://evil.test' }),
      403,
      'csrf_rejected',
    );
    expect((await call(app, 'GET', '/api/me', { cookie })).status).toBe(200);
  });
});

describe('unknown routes and health', () => {
  it('answers 404 with an error code', async () => {
    const { app } = makeApp();
    expectError(await call(app, 'GET', '/api/nope'), 404, 'not_found');
    expectError(await call(app, 'DELETE', '/healthz'), 404, 'not_found');
  });

  it('serves /healthz to anyone', async () => {
    const { app } = makeApp();
    const r = await call(app, 'GET', '/healthz');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
  });
});

describe('the __Host- cookie prefix over https', () => {
  it('sets __Host-sy_session (Secure, Path=/, no Domain) over https and ignores a planted bare sy_session there', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    const base = 'https://switchyard.test';
    const r = await call<LoginResult>(app, 'POST', '/api/auth/login', {
      base,
      body: { username: u.username, password: u.password },
    });
    const setCookie = r.headers.get('Set-Cookie') ?? '';
    expect(setCookie).toMatch(/^__Host-sy_session=/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).not.toMatch(/Domain=/i);
    expect((await call(app, 'GET', '/api/me', { base, cookie: r.body.token })).status).toBe(200);
    // A cookie a sibling subdomain or an http page could have set (cookie tossing) is not read.
    const planted = await tokenFor(u.id, clock);
    const res = await app.request(`${base}/api/me`, { headers: { Cookie: `sy_session=${planted}` } }, env);
    expect(res.status).toBe(401);
    // Logout clears the same name.
    const out = await call(app, 'POST', '/api/auth/logout', { base, cookie: r.body.token });
    expect(out.status).toBe(204);
    expect(out.headers.get('Set-Cookie')).toMatch(/^__Host-sy_session=;/);
  });
});

describe('audit of failed logins', () => {
  it('records each evaluated failure with the account and address, never the password, nor a name no account has', async () => {
    const { app } = makeApp();
    const u = await createUser();
    await call(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: 'hunter2-guess' },
      address: '10.60.0.1',
    });
    // The slip: the password typed where the name goes, for an account nobody has.
    await call(app, 'POST', '/api/auth/login', {
      body: { username: 'Tr0ub4dor-my-real-password', password: 'hunter2-guess' },
      address: '10.60.0.2',
    });
    const { results } = await env.DB.prepare(
      "SELECT target, after FROM audit_log WHERE action = 'auth.login_failed' AND after LIKE '%10.60.0.%' ORDER BY id",
    ).all<{ target: string; after: string }>();
    expect(results.map((r) => [r.target, JSON.parse(r.after)])).toEqual([
      [`user:${u.id}`, { username: u.username, address: '10.60.0.1' }],
      ['account:unknown', { address: '10.60.0.2' }],
    ]);
    expect(JSON.stringify(results)).not.toContain('hunter2');
    expect(JSON.stringify(results).toLowerCase()).not.toContain('tr0ub4dor');
  });
});

describe('a password reset or a disable while a password is being checked', () => {
  // The attack: someone who holds the password keeps logins (or a token creation) in flight while
  // an admin resets it, which revokes every token; a request that had checked the old password
  // made its token after the revoke, and that token lived on.
  it.each([
    ['a reset', { password: 'a brand new password 123', currentPassword: DEFAULT_PASSWORD }],
    ['a disable', { disabled: true }],
  ])('%s: the login that checked the old password gets 401 and no token', async (_name, change) => {
    const held = heldVerifier();
    const { app: racing } = makeApp({ verifyPassword: held.verify });
    const { app, clock } = makeApp();
    const victim = await createUser();
    const admin = await adminWithToken(clock);
    const login = call<LoginResult>(racing, 'POST', '/api/auth/login', {
      body: { username: victim.username, password: victim.password },
    });
    await held.inside;
    expect(
      (await call(app, 'PATCH', `/api/admin/users/${victim.id}`, { token: admin.token, body: change })).status,
    ).toBe(200);
    held.release();
    expectError(await login, 401, 'invalid_credentials');
    const live = await env.DB.prepare('SELECT COUNT(*) AS n FROM auth_tokens WHERE user_id = ? AND revoked_at IS NULL')
      .bind(victim.id)
      .first<{ n: number }>();
    expect(live?.n).toBe(0);
  });

  it('a login racing a reset does not write the old password back when it rehashes a weak hash', async () => {
    const held = heldVerifier();
    const { app: racing } = makeApp({ verifyPassword: held.verify });
    const { app, clock } = makeApp();
    const oldPassword = 'the old password 1';
    const victim = await createUser({ password: oldPassword });
    // A hash from before the current work factor: a login rehashes it.
    await env.DB.prepare('UPDATE users SET password_hash = ? WHERE id = ?')
      .bind(await hashPassword(oldPassword, 1000), victim.id)
      .run();
    const admin = await adminWithToken(clock);
    const login = call(racing, 'POST', '/api/auth/login', {
      body: { username: victim.username, password: oldPassword },
    });
    await held.inside;
    const newPassword = 'a brand new password 456';
    await call(app, 'PATCH', `/api/admin/users/${victim.id}`, {
      token: admin.token,
      body: { password: newPassword, currentPassword: DEFAULT_PASSWORD },
    });
    held.release();
    expectError(await login, 401, 'invalid_credentials');
    const withNew = await call(app, 'POST', '/api/auth/login', {
      body: { username: victim.username, password: newPassword },
    });
    expect(withNew.status).toBe(200);
    const withOld = await call(app, 'POST', '/api/auth/login', {
      body: { username: victim.username, password: oldPassword },
    });
    expect(withOld.status).toBe(401);
  });

  it('an API token created with the old password during a reset is refused and does not exist', async () => {
    const held = heldVerifier();
    const { app: racing, clock } = makeApp({ verifyPassword: held.verify });
    const { app } = makeApp();
    const victim = await createUser();
    const stolen = await tokenFor(victim.id, clock);
    const admin = await adminWithToken(clock);
    const mint = call(racing, 'POST', '/api/tokens', {
      token: stolen,
      body: { name: uniq('t'), currentPassword: victim.password },
    });
    await held.inside;
    await call(app, 'PATCH', `/api/admin/users/${victim.id}`, {
      token: admin.token,
      body: { password: 'another new password 789', currentPassword: DEFAULT_PASSWORD },
    });
    held.release();
    expectError(await mint, 401, 'unauthenticated');
    const apiTokens = await env.DB.prepare("SELECT COUNT(*) AS n FROM auth_tokens WHERE user_id = ? AND kind = 'api'")
      .bind(victim.id)
      .first<{ n: number }>();
    expect(apiTokens?.n).toBe(0);
  });

  it('changing one’s own password with the old one after an admin reset is refused: the reset stands', async () => {
    const held = heldVerifier();
    const { app: racing, clock } = makeApp({ verifyPassword: held.verify });
    const { app } = makeApp();
    const victim = await createUser();
    const session = await tokenFor(victim.id, clock);
    const admin = await adminWithToken(clock);
    const change = call(racing, 'POST', '/api/me/password', {
      token: session,
      body: { currentPassword: victim.password, newPassword: 'chosen by whoever held the old one' },
    });
    await held.inside;
    const reset = 'the admin’s new password 321';
    await call(app, 'PATCH', `/api/admin/users/${victim.id}`, {
      token: admin.token,
      body: { password: reset, currentPassword: DEFAULT_PASSWORD },
    });
    held.release();
    expectError(await change, 409, 'conflict');
    expect(
      (await call(app, 'POST', '/api/auth/login', { body: { username: victim.username, password: reset } })).status,
    ).toBe(200);
  });
});
