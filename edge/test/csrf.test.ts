import { describe, expect, it } from 'vitest';
import { call, createUser, DEFAULT_PASSWORD, expectError, makeApp, tokenFor } from './helpers.ts';

async function setup() {
  const { app, clock } = makeApp();
  const u = await createUser();
  const cookie = await tokenFor(u.id, clock);
  const bearer = await tokenFor(u.id, clock);
  const body = { name: `t${Math.random()}`, currentPassword: DEFAULT_PASSWORD };
  return { app, cookie, bearer, body };
}

describe('CSRF: cookie-authenticated unsafe requests', () => {
  it('are refused without an Origin header', async () => {
    const { app, cookie, body } = await setup();
    expectError(await call(app, 'POST', '/api/tokens', { cookie, origin: null, body }), 403, 'csrf_rejected');
  });

  it('are refused from a foreign Origin, and from Origin: null', async () => {
    const { app, cookie, body } = await setup();
    expectError(
      await call(app, 'POST', '/api/tokens', { cookie, origin: 'https://evil.test', body }),
      403,
      'csrf_rejected',
    );
    expectError(
      await call(app, 'POST', '/api/tokens', { cookie, origin: 'http://localhost:8788', body }),
      403,
      'csrf_rejected',
    );
    expectError(await call(app, 'POST', '/api/tokens', { cookie, origin: 'null', body }), 403, 'csrf_rejected');
    expectError(
      await call(app, 'DELETE', '/api/tokens/01J00000000000000000000000', { cookie, origin: 'https://evil.test' }),
      403,
      'csrf_rejected',
    );
  });

  it('are accepted from the app’s own Origin', async () => {
    const { app, cookie, body } = await setup();
    expect((await call(app, 'POST', '/api/tokens', { cookie, origin: 'http://localhost', body })).status).toBe(201);
  });

  it('are accepted from an origin listed in ALLOWED_ORIGINS', async () => {
    const { app, cookie, body } = await setup();
    const env = { ALLOWED_ORIGINS: 'http://localhost:5173, https://ui.switchyard.test' };
    expect(
      (await call(app, 'POST', '/api/tokens', { cookie, origin: 'https://ui.switchyard.test', body, env })).status,
    ).toBe(201);
    expectError(
      await call(app, 'POST', '/api/tokens', { cookie, origin: 'https://evil.test', body: { name: 'x2' }, env }),
      403,
    );
  });

  it('do not affect safe methods', async () => {
    const { app, cookie } = await setup();
    expect((await call(app, 'GET', '/api/tokens', { cookie, origin: null })).status).toBe(200);
    expect((await call(app, 'GET', '/api/tokens', { cookie, origin: 'https://evil.test' })).status).toBe(200);
  });
});

describe('CSRF: bearer-authenticated requests', () => {
  it('are not affected by Origin at all', async () => {
    const { app, bearer } = await setup();
    expect(
      (
        await call(app, 'POST', '/api/tokens', {
          token: bearer,
          origin: null,
          body: { name: 'b1', currentPassword: DEFAULT_PASSWORD },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call(app, 'POST', '/api/tokens', {
          token: bearer,
          origin: 'https://evil.test',
          body: { name: 'b2', currentPassword: DEFAULT_PASSWORD },
        })
      ).status,
    ).toBe(201);
  });

  it('win over a cookie sent alongside, so a cross-site cookie cannot ride on them', async () => {
    const { app, bearer, cookie } = await setup();
    expect(
      (
        await call(app, 'POST', '/api/tokens', {
          token: bearer,
          cookie,
          origin: 'https://evil.test',
          body: { name: 'b3', currentPassword: DEFAULT_PASSWORD },
        })
      ).status,
    ).toBe(201);
  });
});
