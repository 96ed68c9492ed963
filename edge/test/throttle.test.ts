import { describe, expect, it } from 'vitest';
import { ACCOUNT_RULE, ADDRESS_RULE } from '../src/auth/throttle.ts';
import { call, createUser, expectError, makeApp, uniq, type TestApp } from './helpers.ts';

const login = (app: TestApp, username: string, password: string, address: string) =>
  call(app, 'POST', '/api/auth/login', { body: { username, password }, address });

describe('login throttling per account', () => {
  it('locks after repeated failures with Retry-After, refuses the right password while locked, and lifts after the lock', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) {
      expectError(await login(app, u.username, 'wrong', `10.1.0.${i}`), 401, 'invalid_credentials');
    }
    const locking = await login(app, u.username, 'wrong', '10.1.0.99');
    expectError(locking, 429, 'rate_limited');
    expect(locking.headers.get('Retry-After')).toBe(String(ACCOUNT_RULE.lockMs / 1000));

    // The correct password, from a fresh address, a little later: still refused.
    clock.advance(60_000);
    const refused = await login(app, u.username, u.password, '10.1.1.1');
    expectError(refused, 429, 'rate_limited');
    expect(refused.headers.get('Retry-After')).toBe(String(ACCOUNT_RULE.lockMs / 1000 - 60));
    expect(refused.headers.get('Set-Cookie')).toBeNull();
    expect(refused.body.token).toBeUndefined();

    clock.advance(ACCOUNT_RULE.lockMs - 60_000);
    expect((await login(app, u.username, u.password, '10.1.1.1')).status).toBe(200);
  });

  it('counts the account case-insensitively and whether or not it exists', async () => {
    const { app } = makeApp();
    const name = uniq('nobody');
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) {
      expectError(await login(app, i % 2 ? name.toUpperCase() : name, 'x', `10.2.0.${i}`), 401);
    }
    expectError(await login(app, name, 'x', '10.2.0.50'), 429, 'rate_limited');
  });

  it('forgives earlier failures after a successful login', async () => {
    const { app } = makeApp();
    const u = await createUser();
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.3.0.1'), 401);
    expect((await login(app, u.username, u.password, '10.3.0.1')).status).toBe(200);
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.3.0.1'), 401);
  });

  it('starts a new window once the old one has passed', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 401);
    clock.advance(ACCOUNT_RULE.windowMs);
    for (let i = 1; i < ACCOUNT_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 401);
    expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 429);
  });
});

describe('login throttling per client address', () => {
  it('locks an address that fails across many accounts, without locking other addresses', async () => {
    const { app } = makeApp();
    const victim = await createUser();
    const address = '10.9.9.9';
    let last;
    for (let i = 1; i <= ADDRESS_RULE.maxFailures; i++) last = await login(app, uniq('spray'), 'guess', address);
    expectError(last!, 429, 'rate_limited');
    expect(Number(last!.headers.get('Retry-After'))).toBe(ADDRESS_RULE.lockMs / 1000);
    // A valid login from the locked address is refused; the same login elsewhere works.
    expectError(await login(app, victim.username, victim.password, address), 429);
    expect((await login(app, victim.username, victim.password, '10.9.9.10')).status).toBe(200);
  });
});
