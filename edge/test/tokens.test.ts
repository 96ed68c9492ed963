import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/auth/tokens.ts';
import { PAIR_RULE } from '../src/auth/throttle.ts';
import { MAX_LIVE_API_TOKENS, type TokenInfo } from '../src/tokens/schemas.ts';
import type { PublicUser } from '../src/users/schemas.ts';
import { call, type CreatedToken, createUser, DEFAULT_PASSWORD, expectError, makeApp, tokenFor } from './helpers.ts';

/** GET /api/tokens (the route declares this shape inline). */
type TokenList = { tokens: TokenInfo[] };

async function setup() {
  const { app, clock } = makeApp();
  const u = await createUser();
  const token = await tokenFor(u.id, clock);
  return { app, clock, u, token };
}

describe('POST /api/tokens', () => {
  it('creates a named token whose secret is shown once and works as a bearer', async () => {
    const { app, clock, u, token } = await setup();
    const r = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'ci', expiresInDays: 30, currentPassword: DEFAULT_PASSWORD },
    });
    expect(r.status).toBe(201);
    expect(r.body.secret).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    expect(r.body.token).toEqual({
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
      name: 'ci',
      createdAt: new Date(clock.now()).toISOString(),
      expiresAt: new Date(clock.now() + 30 * DAY_MS).toISOString(),
      lastUsedAt: null,
    });
    expect((await call<PublicUser>(app, 'GET', '/api/me', { token: r.body.secret })).body.id).toBe(u.id);
    const list = await call(app, 'GET', '/api/tokens', { token });
    expect(list.text).not.toContain(r.body.secret);
    const dump = JSON.stringify((await env.DB.prepare('SELECT * FROM auth_tokens').all()).results);
    expect(dump).not.toContain(r.body.secret);
  });

  it('defaults to 90 days', async () => {
    const { app, clock, token } = await setup();
    const r = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'default', currentPassword: DEFAULT_PASSWORD },
    });
    expect(r.body.token.expiresAt).toBe(new Date(clock.now() + 90 * DAY_MS).toISOString());
  });

  it('answers 400 naming the field for bad names and expiries', async () => {
    const { app, token } = await setup();
    const bad = async (body: unknown) =>
      expectError(await call(app, 'POST', '/api/tokens', { token, body }), 400, 'invalid_request').field;
    expect(await bad({})).toBe('name');
    expect(await bad({ name: '' })).toBe('name');
    expect(await bad({ name: '   ' })).toBe('name');
    expect(await bad({ name: 'x'.repeat(65) })).toBe('name');
    expect(await bad({ name: 'a\u0000b' })).toBe('name');
    const pw = DEFAULT_PASSWORD;
    expect(await bad({ name: 'ok', expiresInDays: 0, currentPassword: pw })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', expiresInDays: 366, currentPassword: pw })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', expiresInDays: 1.5, currentPassword: pw })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', scopes: ['all'], currentPassword: pw })).toBe('scopes');
    expect(await bad({ name: 'ok' })).toBe('currentPassword');
    expect(await bad({ name: 'ok', currentPassword: '' })).toBe('currentPassword');
    expect(await bad({ name: 'ok', currentPassword: 5 })).toBe('currentPassword');
  });

  it('answers 409 for a second live token with the same name, and at the limit', async () => {
    const { app, token } = await setup();
    expect(
      (await call(app, 'POST', '/api/tokens', { token, body: { name: 'dup', currentPassword: DEFAULT_PASSWORD } }))
        .status,
    ).toBe(201);
    const dup = expectError(
      await call(app, 'POST', '/api/tokens', { token, body: { name: 'dup', currentPassword: DEFAULT_PASSWORD } }),
      409,
      'token_name_taken',
    );
    expect(dup.field).toBe('name');
    for (let i = 1; i < MAX_LIVE_API_TOKENS; i++) {
      expect(
        (await call(app, 'POST', '/api/tokens', { token, body: { name: `n${i}`, currentPassword: DEFAULT_PASSWORD } }))
          .status,
      ).toBe(201);
    }
    expectError(
      await call(app, 'POST', '/api/tokens', {
        token,
        body: { name: 'one-too-many', currentPassword: DEFAULT_PASSWORD },
      }),
      409,
      'token_limit',
    );
  });

  it('answers 401 without credentials and 413 for a huge body', async () => {
    const { app, token } = await setup();
    expectError(
      await call(app, 'POST', '/api/tokens', { body: { name: 'x', currentPassword: DEFAULT_PASSWORD } }),
      401,
    );
    expectError(
      await call(app, 'POST', '/api/tokens', { token, raw: JSON.stringify({ name: 'x'.repeat(70_000) }) }),
      413,
    );
  });
});

describe('GET /api/tokens[/:id]', () => {
  it('lists only the caller’s live API tokens, not login sessions', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    await tokenFor(other.id, clock, { kind: 'api', name: 'theirs' });
    const mine = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'mine', currentPassword: DEFAULT_PASSWORD },
    });
    const list = await call<TokenList>(app, 'GET', '/api/tokens', { token });
    expect(list.status).toBe(200);
    expect(list.body.tokens).toEqual([mine.body.token]);
    expect((await call<TokenInfo>(app, 'GET', `/api/tokens/${mine.body.token.id}`, { token })).body).toEqual(
      mine.body.token,
    );
  });

  it('answers 404 for another user’s token and 400 for a malformed id', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    const otherToken = await tokenFor(other.id, clock);
    const theirs = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token: otherToken,
      body: { name: 'theirs', currentPassword: DEFAULT_PASSWORD },
    });
    expectError(await call(app, 'GET', `/api/tokens/${theirs.body.token.id}`, { token }), 404, 'not_found');
    expectError(await call(app, 'GET', '/api/tokens/01J00000000000000000000000', { token }), 404, 'not_found');
    expect(expectError(await call(app, 'GET', '/api/tokens/not-an-id', { token }), 400).field).toBe('id');
    expectError(await call(app, 'GET', '/api/tokens'), 401);
  });

  it('drops expired tokens from the list and refuses them (clock moved)', async () => {
    const { app, clock, token } = await setup();
    const created = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'short', expiresInDays: 1, currentPassword: DEFAULT_PASSWORD },
    });
    const longLived = await tokenFor((await call<PublicUser>(app, 'GET', '/api/me', { token })).body.id, clock, {
      ttlMs: 30 * DAY_MS,
    });
    clock.advance(DAY_MS);
    expectError(await call(app, 'GET', '/api/me', { token: created.body.secret }), 401);
    expect((await call<TokenList>(app, 'GET', '/api/tokens', { token: longLived })).body.tokens).toEqual([]);
    expectError(await call(app, 'GET', `/api/tokens/${created.body.token.id}`, { token: longLived }), 404);
  });
});

describe('DELETE /api/tokens/:id', () => {
  it('revokes: the very next request with that token is 401', async () => {
    const { app, token } = await setup();
    const created = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'gone', currentPassword: DEFAULT_PASSWORD },
    });
    expect((await call(app, 'GET', '/api/me', { token: created.body.secret })).status).toBe(200);
    expect((await call(app, 'DELETE', `/api/tokens/${created.body.token.id}`, { token })).status).toBe(204);
    expectError(await call(app, 'GET', '/api/me', { token: created.body.secret }), 401);
    expectError(await call(app, 'DELETE', `/api/tokens/${created.body.token.id}`, { token }), 404);
    // The name is free again once the old token is revoked.
    expect(
      (await call(app, 'POST', '/api/tokens', { token, body: { name: 'gone', currentPassword: DEFAULT_PASSWORD } }))
        .status,
    ).toBe(201);
  });

  it('answers 404 for another user’s token and leaves it working', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    const otherToken = await tokenFor(other.id, clock);
    const theirs = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token: otherToken,
      body: { name: 'theirs', currentPassword: DEFAULT_PASSWORD },
    });
    expectError(await call(app, 'DELETE', `/api/tokens/${theirs.body.token.id}`, { token }), 404, 'not_found');
    expect((await call(app, 'GET', '/api/me', { token: theirs.body.secret })).status).toBe(200);
  });

  it('answers 400 for a malformed id and 401 without credentials', async () => {
    const { app, token } = await setup();
    expect(expectError(await call(app, 'DELETE', '/api/tokens/zzz', { token }), 400).field).toBe('id');
    expectError(await call(app, 'DELETE', '/api/tokens/01J00000000000000000000000'), 401);
  });
});

describe('minting API tokens needs a login session and the current password', () => {
  it('refuses an API token minting another (403), even with the right password', async () => {
    const { app, clock, u } = await setup();
    const apiToken = await tokenFor(u.id, clock, { kind: 'api' });
    const r = expectError(
      await call(app, 'POST', '/api/tokens', {
        token: apiToken,
        body: { name: 'more', currentPassword: DEFAULT_PASSWORD },
      }),
      403,
      'forbidden',
    );
    expect(r.message).toMatch(/login session/);
    expect(
      (
        await env.DB.prepare("SELECT count(*) AS n FROM auth_tokens WHERE user_id = ? AND kind = 'api'")
          .bind(u.id)
          .first()
      )?.n,
    ).toBe(1);
  });

  it('refuses a stolen session without the password: 403 naming currentPassword, and throttles guessing', async () => {
    const { app, token } = await setup();
    const wrong = expectError(
      await call(app, 'POST', '/api/tokens', {
        token,
        body: { name: 'x', currentPassword: 'not it' },
        address: '10.20.0.1',
      }),
      403,
      'invalid_credentials',
    );
    expect(wrong.field).toBe('currentPassword');
    for (let i = 2; i < PAIR_RULE.maxFailures; i++) {
      expectError(
        await call(app, 'POST', '/api/tokens', {
          token,
          body: { name: 'x', currentPassword: `guess${i}` },
          address: '10.20.0.1',
        }),
        403,
      );
    }
    const limited = expectError(
      await call(app, 'POST', '/api/tokens', {
        token,
        body: { name: 'x', currentPassword: 'guess5' },
        address: '10.20.0.1',
      }),
      429,
      'rate_limited',
    );
    expect(limited.field).toBe('currentPassword');
    // Locked: even the right password is not evaluated from there now.
    expectError(
      await call(app, 'POST', '/api/tokens', {
        token,
        body: { name: 'x', currentPassword: DEFAULT_PASSWORD },
        address: '10.20.0.1',
      }),
      429,
    );
  });

  it('audits creation and revocation (never the secret)', async () => {
    const { app, u, token } = await setup();
    const created = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'audited', currentPassword: DEFAULT_PASSWORD },
    });
    expect((await call(app, 'DELETE', `/api/tokens/${created.body.token.id}`, { token })).status).toBe(204);
    const { results } = await env.DB.prepare(
      'SELECT action, actor_id, target, after FROM audit_log WHERE target = ? ORDER BY id',
    )
      .bind(`token:${created.body.token.id}`)
      .all<{ action: string; actor_id: string; after: string | null }>();
    expect(results.map((r) => [r.action, r.actor_id])).toEqual([
      ['token.create', u.id],
      ['token.revoke', u.id],
    ]);
    expect(JSON.stringify(results)).not.toContain(created.body.secret);
  });
});

describe('a password reset revokes every token of the user', () => {
  it("admin reset: the user's API tokens and login sessions stop working", async () => {
    const { app, clock, u, token } = await setup();
    const created = await call<CreatedToken>(app, 'POST', '/api/tokens', {
      token,
      body: { name: 'script', currentPassword: DEFAULT_PASSWORD },
    });
    const apiToken = created.body.secret;
    expect((await call(app, 'GET', '/api/me', { token: apiToken })).status).toBe(200);
    const admin = await createUser({ role: 'admin' });
    const adminToken = await tokenFor(admin.id, clock);
    const reset = await call(app, 'PATCH', `/api/admin/users/${u.id}`, {
      token: adminToken,
      body: { password: 'a brand new password', currentPassword: DEFAULT_PASSWORD },
    });
    expect(reset.status).toBe(200);
    expectError(await call(app, 'GET', '/api/me', { token: apiToken }), 401, 'unauthenticated');
    expectError(await call(app, 'GET', '/api/me', { token }), 401, 'unauthenticated');
  });

  it('disabling (no reset) ends login sessions but leaves API tokens to come back with the user', async () => {
    const { app, clock, u, token } = await setup();
    const apiToken = await tokenFor(u.id, clock, { kind: 'api' });
    const admin = await createUser({ role: 'admin' });
    const adminToken = await tokenFor(admin.id, clock);
    expect(
      (await call(app, 'PATCH', `/api/admin/users/${u.id}`, { token: adminToken, body: { disabled: true } })).status,
    ).toBe(200);
    expectError(await call(app, 'GET', '/api/me', { token: apiToken }), 401);
    expect(
      (
        await call(app, 'PATCH', `/api/admin/users/${u.id}`, {
          token: adminToken,
          body: { disabled: false, currentPassword: DEFAULT_PASSWORD },
        })
      ).status,
    ).toBe(200);
    expect((await call(app, 'GET', '/api/me', { token: apiToken })).status).toBe(200);
    expectError(await call(app, 'GET', '/api/me', { token }), 401);
  });

  it('self change (POST /api/me/password): every session and API token ends, this one too, and a new session begins', async () => {
    const { app, clock, u, token } = await setup();
    const otherSession = await tokenFor(u.id, clock);
    const apiToken = await tokenFor(u.id, clock, { kind: 'api' });
    const bad = expectError(
      await call(app, 'POST', '/api/me/password', {
        token,
        body: { currentPassword: 'nope', newPassword: 'another long password' },
      }),
      403,
      'invalid_credentials',
    );
    expect(bad.field).toBe('currentPassword');
    expect(
      expectError(
        await call(app, 'POST', '/api/me/password', {
          token,
          body: { currentPassword: DEFAULT_PASSWORD, newPassword: 'short' },
        }),
        400,
      ).field,
    ).toBe('newPassword');
    expectError(
      await call(app, 'POST', '/api/me/password', {
        token: apiToken,
        body: { currentPassword: DEFAULT_PASSWORD, newPassword: 'another long password' },
      }),
      403,
      'forbidden',
    );
    const ok = await call(app, 'POST', '/api/me/password', {
      token,
      body: { currentPassword: DEFAULT_PASSWORD, newPassword: 'another long password' },
    });
    expect(ok.status).toBe(200);
    const renewed = ok.body as { token: string; expiresAt: string };
    expect(renewed.token).toMatch(/^sy_/);
    expect(ok.headers.get('Set-Cookie')).toContain(renewed.token);
    expect((await call(app, 'GET', '/api/me', { token: renewed.token })).status).toBe(200);
    // A thief's copy of the cookie the change was made with is that very token: it ends too.
    expectError(await call(app, 'GET', '/api/me', { token }), 401);
    expectError(await call(app, 'GET', '/api/me', { token: otherSession }), 401);
    expectError(await call(app, 'GET', '/api/me', { token: apiToken }), 401);
    const login = await call(app, 'POST', '/api/auth/login', {
      body: { username: u.username, password: 'another long password' },
    });
    expect(login.status).toBe(200);
    const audit = await env.DB.prepare("SELECT after FROM audit_log WHERE target = ? AND action = 'user.update'")
      .bind(`user:${u.id}`)
      .first<{ after: string }>();
    expect(JSON.parse(audit!.after)).toEqual({ passwordChanged: true, via: 'self' });
  });
});
