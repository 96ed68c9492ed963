import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/auth/tokens.ts';
import { MAX_LIVE_API_TOKENS } from '../src/tokens/schemas.ts';
import { call, createUser, expectError, makeApp, tokenFor } from './helpers.ts';

async function setup() {
  const { app, clock } = makeApp();
  const u = await createUser();
  const token = await tokenFor(u.id, clock);
  return { app, clock, u, token };
}

describe('POST /api/tokens', () => {
  it('creates a named token whose secret is shown once and works as a bearer', async () => {
    const { app, clock, u, token } = await setup();
    const r = await call(app, 'POST', '/api/tokens', { token, body: { name: 'ci', expiresInDays: 30 } });
    expect(r.status).toBe(201);
    expect(r.body.secret).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    expect(r.body.token).toEqual({
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
      name: 'ci',
      createdAt: new Date(clock.now()).toISOString(),
      expiresAt: new Date(clock.now() + 30 * DAY_MS).toISOString(),
      lastUsedAt: null,
    });
    expect((await call(app, 'GET', '/api/me', { token: r.body.secret })).body.id).toBe(u.id);
    const list = await call(app, 'GET', '/api/tokens', { token });
    expect(list.text).not.toContain(r.body.secret);
    const dump = JSON.stringify((await env.DB.prepare('SELECT * FROM auth_tokens').all()).results);
    expect(dump).not.toContain(r.body.secret);
  });

  it('defaults to 90 days', async () => {
    const { app, clock, token } = await setup();
    const r = await call(app, 'POST', '/api/tokens', { token, body: { name: 'default' } });
    expect(r.body.token.expiresAt).toBe(new Date(clock.now() + 90 * DAY_MS).toISOString());
  });

  it('answers 400 naming the field for bad names and expiries', async () => {
    const { app, token } = await setup();
    const bad = async (body: unknown) => expectError(await call(app, 'POST', '/api/tokens', { token, body }), 400, 'invalid_request').field;
    expect(await bad({})).toBe('name');
    expect(await bad({ name: '' })).toBe('name');
    expect(await bad({ name: '   ' })).toBe('name');
    expect(await bad({ name: 'x'.repeat(65) })).toBe('name');
    expect(await bad({ name: 'a\u0000b' })).toBe('name');
    expect(await bad({ name: 'ok', expiresInDays: 0 })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', expiresInDays: 366 })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', expiresInDays: 1.5 })).toBe('expiresInDays');
    expect(await bad({ name: 'ok', scopes: ['all'] })).toBe('scopes');
  });

  it('answers 409 for a second live token with the same name, and at the limit', async () => {
    const { app, token } = await setup();
    expect((await call(app, 'POST', '/api/tokens', { token, body: { name: 'dup' } })).status).toBe(201);
    const dup = expectError(await call(app, 'POST', '/api/tokens', { token, body: { name: 'dup' } }), 409, 'token_name_taken');
    expect(dup.field).toBe('name');
    for (let i = 1; i < MAX_LIVE_API_TOKENS; i++) {
      expect((await call(app, 'POST', '/api/tokens', { token, body: { name: `n${i}` } })).status).toBe(201);
    }
    expectError(await call(app, 'POST', '/api/tokens', { token, body: { name: 'one-too-many' } }), 409, 'token_limit');
  });

  it('answers 401 without credentials and 413 for a huge body', async () => {
    const { app, token } = await setup();
    expectError(await call(app, 'POST', '/api/tokens', { body: { name: 'x' } }), 401);
    expectError(await call(app, 'POST', '/api/tokens', { token, raw: JSON.stringify({ name: 'x'.repeat(70_000) }) }), 413);
  });
});

describe('GET /api/tokens[/:id]', () => {
  it('lists only the caller’s live API tokens, not login sessions', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    await tokenFor(other.id, clock, { kind: 'api', name: 'theirs' });
    const mine = await call(app, 'POST', '/api/tokens', { token, body: { name: 'mine' } });
    const list = await call(app, 'GET', '/api/tokens', { token });
    expect(list.status).toBe(200);
    expect(list.body.tokens).toEqual([mine.body.token]);
    expect((await call(app, 'GET', `/api/tokens/${mine.body.token.id}`, { token })).body).toEqual(mine.body.token);
  });

  it('answers 404 for another user’s token and 400 for a malformed id', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    const otherToken = await tokenFor(other.id, clock);
    const theirs = await call(app, 'POST', '/api/tokens', { token: otherToken, body: { name: 'theirs' } });
    expectError(await call(app, 'GET', `/api/tokens/${theirs.body.token.id}`, { token }), 404, 'not_found');
    expectError(await call(app, 'GET', '/api/tokens/01J00000000000000000000000', { token }), 404, 'not_found');
    expect(expectError(await call(app, 'GET', '/api/tokens/not-an-id', { token }), 400).field).toBe('id');
    expectError(await call(app, 'GET', '/api/tokens'), 401);
  });

  it('drops expired tokens from the list and refuses them (clock moved)', async () => {
    const { app, clock, token } = await setup();
    const created = await call(app, 'POST', '/api/tokens', { token, body: { name: 'short', expiresInDays: 1 } });
    const longLived = await tokenFor((await call(app, 'GET', '/api/me', { token })).body.id, clock, { ttlMs: 30 * DAY_MS });
    clock.advance(DAY_MS);
    expectError(await call(app, 'GET', '/api/me', { token: created.body.secret }), 401);
    expect((await call(app, 'GET', '/api/tokens', { token: longLived })).body.tokens).toEqual([]);
    expectError(await call(app, 'GET', `/api/tokens/${created.body.token.id}`, { token: longLived }), 404);
  });
});

describe('DELETE /api/tokens/:id', () => {
  it('revokes: the very next request with that token is 401', async () => {
    const { app, token } = await setup();
    const created = await call(app, 'POST', '/api/tokens', { token, body: { name: 'gone' } });
    expect((await call(app, 'GET', '/api/me', { token: created.body.secret })).status).toBe(200);
    expect((await call(app, 'DELETE', `/api/tokens/${created.body.token.id}`, { token })).status).toBe(204);
    expectError(await call(app, 'GET', '/api/me', { token: created.body.secret }), 401);
    expectError(await call(app, 'DELETE', `/api/tokens/${created.body.token.id}`, { token }), 404);
    // The name is free again once the old token is revoked.
    expect((await call(app, 'POST', '/api/tokens', { token, body: { name: 'gone' } })).status).toBe(201);
  });

  it('answers 404 for another user’s token and leaves it working', async () => {
    const { app, clock, token } = await setup();
    const other = await createUser();
    const otherToken = await tokenFor(other.id, clock);
    const theirs = await call(app, 'POST', '/api/tokens', { token: otherToken, body: { name: 'theirs' } });
    expectError(await call(app, 'DELETE', `/api/tokens/${theirs.body.token.id}`, { token }), 404, 'not_found');
    expect((await call(app, 'GET', '/api/me', { token: theirs.body.secret })).status).toBe(200);
  });

  it('answers 400 for a malformed id and 401 without credentials', async () => {
    const { app, token } = await setup();
    expect(expectError(await call(app, 'DELETE', '/api/tokens/zzz', { token }), 400).field).toBe('id');
    expectError(await call(app, 'DELETE', '/api/tokens/01J00000000000000000000000'), 401);
  });
});
