import { describe, expect, it } from 'vitest';
import { verifyPassword } from '../src/auth/password.ts';
import { ACCOUNT_RULE, ADDRESS_RULE, PAIR_RULE } from '../src/auth/throttle.ts';
import { call, createUser, expectError, type LoginResult, makeApp, uniq, type TestApp } from './helpers.ts';

// Typed as the success; refusals are checked with expectError (and by the token being absent).
const login = (app: TestApp, username: string, password: string, address: string) =>
  call<LoginResult>(app, 'POST', '/api/auth/login', { body: { username, password }, address });

/** An app whose password checks are counted: "evaluated" means PBKDF2 ran for that guess. */
function countingApp() {
  let evaluated = 0;
  const made = makeApp({
    verifyPassword: (password, stored) => {
      evaluated += 1;
      return verifyPassword(password, stored);
    },
  });
  return { ...made, evaluated: () => evaluated };
}

describe('login throttling: one account from one address', () => {
  it('locks the pair after repeated failures with Retry-After and refuses the right password from there while locked', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) {
      expectError(await login(app, u.username, 'wrong', '10.1.0.1'), 401, 'invalid_credentials');
    }
    const locking = await login(app, u.username, 'wrong', '10.1.0.1');
    expectError(locking, 429, 'rate_limited');
    expect(locking.headers.get('Retry-After')).toBe(String(PAIR_RULE.lockMs / 1000));

    clock.advance(60_000);
    const refused = await login(app, u.username, u.password, '10.1.0.1');
    expectError(refused, 429, 'rate_limited');
    expect(refused.headers.get('Retry-After')).toBe(String(PAIR_RULE.lockMs / 1000 - 60));
    expect(refused.headers.get('Set-Cookie')).toBeNull();
    expect(refused.body.token).toBeUndefined();

    // The guesser's lock is theirs: the owner elsewhere is not held back.
    expect((await login(app, u.username, u.password, '10.1.0.2')).status).toBe(200);
    clock.advance(PAIR_RULE.lockMs - 60_000);
    expect((await login(app, u.username, u.password, '10.1.0.1')).status).toBe(200);
  });

  it('counts the account case-insensitively and whether or not it exists', async () => {
    const { app } = makeApp();
    const name = uniq('nobody');
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) {
      expectError(await login(app, i % 2 ? name.toUpperCase() : name, 'x', '10.2.0.1'), 401);
    }
    expectError(await login(app, name, 'x', '10.2.0.1'), 429, 'rate_limited');
  });

  it('forgives earlier failures after a successful login', async () => {
    const { app } = makeApp();
    const u = await createUser();
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.3.0.1'), 401);
    expect((await login(app, u.username, u.password, '10.3.0.1')).status).toBe(200);
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.3.0.1'), 401);
  });

  it('starts a new window once the old one has passed', async () => {
    const { app, clock } = makeApp();
    const u = await createUser();
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 401);
    clock.advance(PAIR_RULE.windowMs);
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 401);
    expectError(await login(app, u.username, 'wrong', '10.4.0.1'), 429);
  });
});

describe('login throttling: one account from many addresses', () => {
  it('locks the account for unfamiliar addresses, but its owner still logs in from a familiar one', async () => {
    const { app } = makeApp();
    const admin = await createUser({ role: 'admin' });
    // The owner has logged in from their usual address before.
    expect((await login(app, admin.username, admin.password, '10.5.0.1')).status).toBe(200);

    // A distributed guesser, one try per address, as far as the account rule lets it.
    let last;
    for (let i = 1; i <= ACCOUNT_RULE.maxFailures; i++) last = await login(app, admin.username, 'guess', `10.5.1.${i}`);
    expectError(last!, 429, 'rate_limited');
    // Every further stranger is refused before the password is looked at, even with the right one.
    expectError(await login(app, admin.username, admin.password, '10.5.2.1'), 429, 'rate_limited');
    // The owner, from their familiar address, is not locked out.
    const owner = await login(app, admin.username, admin.password, '10.5.0.1');
    expect(owner.status).toBe(200);
    expect(owner.body.user.role).toBe('admin');
  });

  it('a familiar address is still bounded by the pair rule', async () => {
    const { app } = makeApp();
    const u = await createUser();
    expect((await login(app, u.username, u.password, '10.6.0.1')).status).toBe(200);
    for (let i = 1; i < PAIR_RULE.maxFailures; i++) expectError(await login(app, u.username, 'wrong', '10.6.0.1'), 401);
    expectError(await login(app, u.username, 'wrong', '10.6.0.1'), 429);
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

  it('successful logins do not use up the address budget', async () => {
    const { app } = makeApp();
    const u = await createUser();
    for (let i = 0; i < ADDRESS_RULE.maxFailures + 5; i++) {
      expect((await login(app, u.username, u.password, '10.9.8.1')).status).toBe(200);
    }
  });
});

describe('parallel guesses (the race the reservation closes)', () => {
  it('50 parallel wrong guesses from one address: at most the pair limit is evaluated, the rest are 429', async () => {
    const { app, evaluated } = countingApp();
    const u = await createUser();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => login(app, u.username, 'wrong guess', '10.7.0.1')),
    );
    expect(evaluated()).toBeLessThanOrEqual(PAIR_RULE.maxFailures);
    expect(evaluated()).toBeGreaterThan(0);
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThan(PAIR_RULE.maxFailures);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
  });

  it('50 parallel wrong guesses from 50 addresses: at most the account limit is evaluated', async () => {
    const { app, evaluated } = countingApp();
    const u = await createUser({ role: 'admin' });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => login(app, u.username, 'wrong guess', `10.8.${i}.1`)),
    );
    expect(evaluated()).toBeLessThanOrEqual(ACCOUNT_RULE.maxFailures);
    expect(results.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(50 - ACCOUNT_RULE.maxFailures);
  });
});
