import { describe, expect, it } from 'vitest';
import { ErrorCodeSchema } from '../src/errors.ts';
import {
  adminWithToken,
  call,
  createUser,
  DEFAULT_PASSWORD,
  makeApp,
  SpyProbe,
  tokenFor,
  type CallOptions,
  type CreatedToken,
} from './helpers.ts';

/**
 * Random and malformed bodies at every route: nothing may answer 5xx, and every error must be
 * the API's error value with a known code. Seeded, so a failure names the seed and the case
 * number and replays exactly with FUZZ_SEED below.
 */
const FUZZ_SEED = 0x5eed_2027;
const CASES_PER_ROUTE = 1000;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }

  static readonly KEYS = [
    'username',
    'password',
    'role',
    'disabled',
    'name',
    'expiresInDays',
    'llmBackend',
    'defaultModel',
    'currentPassword',
    'newPassword',
    'claude',
    'pi',
    'sessionIdleMinutes',
    'unusedRunnerIdleMinutes',
    'sessionMaxMinutes',
    'maxMessageBytes',
    'maxLiveRunnersPerUser',
    'maxLiveRunners',
    '__proto__',
    'constructor',
    'prototype',
    '',
    ' ',
    'ID',
    'admin',
    '\u0000',
  ] as const;

  static readonly STRINGS = [
    '',
    ' ',
    'claude',
    'pi',
    'admin',
    'user',
    'Claude',
    'PI',
    'null',
    'true',
    '0',
    '-1',
    '1e309',
    "' OR 1=1 --",
    '"; DROP TABLE users; --',
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '\u0000',
    '\u2028\u2029',
    '😀'.repeat(40),
    '\uD800',
    'a'.repeat(300),
    'correct horse battery staple',
    '01J00000000000000000000000',
    `sy_${'A'.repeat(43)}`,
    '%00',
    '\\',
    '{}',
    '[]',
  ] as const;

  string(): string {
    if (this.chance(0.5)) return this.pick(Gen.STRINGS);
    const len = this.pick([0, 1, 3, 12, 33, 64, 65, 257, 1500]);
    let s = '';
    for (let i = 0; i < len; i++) {
      s += String.fromCharCode(this.chance(0.8) ? 32 + this.int(95) : this.int(0xffff));
    }
    return s;
  }

  number(): number {
    return this.pick([
      0,
      -0,
      1,
      -1,
      1.5,
      2,
      12,
      15,
      59,
      60,
      365,
      366,
      1024,
      4096,
      2 ** 31,
      2 ** 53 + 1,
      -1e308,
      1e308,
      Number.MIN_VALUE,
      0.1 + 0.2,
      this.int(1e6),
      -this.int(1e6),
    ]);
  }

  json(depth = 0): unknown {
    const kind = this.int(depth > 3 ? 5 : 7);
    switch (kind) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.number();
      case 3:
      case 4:
        return this.string();
      case 5:
        return Array.from({ length: this.int(4) }, () => this.json(depth + 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let i = this.int(5); i > 0; i--) o[this.pick(Gen.KEYS)] = this.json(depth + 1);
        return o;
      }
    }
  }

  /** A valid body with one to three things wrong with it. */
  mutate(valid: Record<string, unknown>): unknown {
    let body: Record<string, unknown> = structuredClone(valid);
    for (let n = 1 + this.int(3); n > 0; n--) {
      const keys = Object.keys(body);
      switch (this.int(6)) {
        case 0:
          if (keys.length > 0) delete body[this.pick(keys)];
          break;
        case 1:
          if (keys.length > 0) body[this.pick(keys)] = this.json(1);
          break;
        case 2:
          body[this.pick(Gen.KEYS)] = this.json(1);
          break;
        case 3:
          return this.chance(0.5) ? [body] : this.json();
        case 4:
          body = JSON.parse(`{"__proto__": ${JSON.stringify(this.json(2)) ?? 'null'}}`) as Record<string, unknown>;
          break;
        default:
          break; // Sometimes the body stays valid: valid paths must not 5xx either.
      }
    }
    return body;
  }

  /** Raw text that is not the JSON the route wants, or not JSON at all. */
  raw(valid: Record<string, unknown>): string {
    const text = JSON.stringify(valid);
    switch (this.int(8)) {
      case 0:
        return text.slice(0, this.int(text.length));
      case 1:
        return `${text}${this.pick(['}', ',', ' garbage', '\u0000'])}`;
      case 2:
        return this.pick([
          '',
          ' ',
          'null',
          'true',
          '0',
          '"str"',
          'NaN',
          'undefined',
          "{'a':1}",
          '{"a":1,}',
          '\uFEFF{}',
        ]);
      case 3:
        return '['.repeat(1 + this.int(2000)) + ']'.repeat(this.int(2000));
      case 4:
        return `{"${'k'.repeat(10)}": ${'{"a":'.repeat(200)}1${'}'.repeat(200)}}`;
      case 5:
        return JSON.stringify({ ...valid, pad: 'x'.repeat(70_000) });
      case 6:
        return Array.from({ length: this.int(64) }, () => String.fromCharCode(this.int(256))).join('');
      default:
        return JSON.stringify(this.json());
    }
  }

  contentType(): string | null {
    return this.pick([
      'application/json',
      'application/json',
      'application/json',
      'application/json; charset=utf-8',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      null,
    ]);
  }
}

interface Route {
  method: string;
  path: (g: Gen, ctx: Ctx) => string;
  valid: (g: Gen, ctx: Ctx) => Record<string, unknown>;
  auth: 'admin' | 'user' | 'none' | 'fresh';
}

interface Ctx {
  adminToken: string;
  userToken: string;
  victimId: string;
  ownTokenId: string;
  clockNow: () => number;
  freshToken: () => Promise<string>;
}

/** Percent-encodes what it can; lone surrogates cannot be encoded and become raw escapes. */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

/** Header values a client can actually send: printable ASCII only (fetch refuses the rest). */
const headerSafe = (s: string) => s.replace(/[^\x20-\x7e]/g, '');

const randomId = (g: Gen, ctx: Ctx, real: string) =>
  g.pick([
    real,
    ctx.victimId,
    ctx.ownTokenId,
    '01J00000000000000000000000',
    encode(g.string()).slice(0, 200) || 'x',
    '%2e%2e',
    '0',
    '%ZZ',
  ]);

const ROUTES: Route[] = [
  {
    method: 'POST',
    path: () => '/api/auth/login',
    auth: 'none',
    valid: (g) => ({ username: g.pick(['fuzz-admin', 'nobody', g.string()]), password: g.string() }),
  },
  { method: 'POST', path: () => '/api/auth/logout', auth: 'fresh', valid: () => ({}) },
  { method: 'GET', path: () => '/api/me', auth: 'user', valid: () => ({}) },
  // With the fuzzer's API tokens valid bodies end at 403 (minting needs a login session), so
  // the random cases stay cheap; tokens.test.ts covers the password path.
  {
    method: 'POST',
    path: () => '/api/tokens',
    auth: 'user',
    valid: (g) => ({
      name: `n${g.int(1e9)}`,
      expiresInDays: 1 + g.int(365),
      currentPassword: g.pick([DEFAULT_PASSWORD, 'wrong']),
    }),
  },
  {
    method: 'POST',
    path: () => '/api/me/password',
    auth: 'user',
    valid: (g) => ({ currentPassword: g.pick([DEFAULT_PASSWORD, 'wrong']), newPassword: 'another long password' }),
  },
  { method: 'GET', path: () => '/api/tokens', auth: 'user', valid: () => ({}) },
  { method: 'GET', path: (g, c) => `/api/tokens/${randomId(g, c, c.ownTokenId)}`, auth: 'user', valid: () => ({}) },
  {
    method: 'DELETE',
    path: (g, c) => `/api/tokens/${randomId(g, c, '01J00000000000000000000001')}`,
    auth: 'user',
    valid: () => ({}),
  },
  { method: 'GET', path: () => '/api/settings', auth: 'user', valid: () => ({}) },
  { method: 'GET', path: () => '/api/admin/users', auth: 'admin', valid: () => ({}) },
  {
    method: 'POST',
    path: () => '/api/admin/users',
    auth: 'admin',
    valid: (g) => ({ username: `f${g.int(1e9)}`, password: 'long enough password', role: g.pick(['admin', 'user']) }),
  },
  { method: 'GET', path: (g, c) => `/api/admin/users/${randomId(g, c, c.victimId)}`, auth: 'admin', valid: () => ({}) },
  {
    method: 'PATCH',
    path: (g, c) => `/api/admin/users/${randomId(g, c, c.victimId)}`,
    auth: 'admin',
    valid: (g) => ({ role: g.pick(['admin', 'user']), disabled: g.chance(0.5) }),
  },
  {
    method: 'DELETE',
    path: (g, c) => `/api/admin/users/${randomId(g, c, '01J00000000000000000000002')}`,
    auth: 'admin',
    valid: () => ({}),
  },
  { method: 'GET', path: () => '/api/admin/settings', auth: 'admin', valid: () => ({}) },
  {
    method: 'PUT',
    path: () => '/api/admin/settings',
    auth: 'admin',
    valid: (g) => ({
      llmBackend: g.pick(['claude', 'pi']),
      sessionIdleMinutes: 1 + g.int(60),
      defaultModel: { pi: g.pick([null, 'm-1']) },
    }),
  },
  {
    method: 'GET',
    path: (g) =>
      `/api/admin/audit?limit=${g.pick(['1', '50', '0', '-1', 'x', '1e3', ''])}${g.chance(0.3) ? `&cursor=${encode(g.string())}` : ''}`,
    auth: 'admin',
    valid: () => ({}),
  },
  { method: 'GET', path: () => '/healthz', auth: 'none', valid: () => ({}) },
];

const KNOWN_CODES = new Set<string>(ErrorCodeSchema.options);

describe('fuzz: random and malformed bodies at every route', async () => {
  const probe = new SpyProbe();
  const { app, clock } = makeApp({ probe, probeTimeoutMs: 50 });
  const admin = await adminWithToken(clock);
  await createUser({ username: 'fuzz-admin', role: 'admin' });
  const adminApi = await tokenFor(admin.user.id, clock, { kind: 'api' });
  const user = await createUser();
  const userToken = await tokenFor(user.id, clock, { kind: 'api' });
  const own = await call<CreatedToken>(app, 'POST', '/api/tokens', {
    token: await tokenFor(user.id, clock),
    body: { name: 'own', currentPassword: DEFAULT_PASSWORD },
  });
  const victim = await createUser();
  const ctx: Ctx = {
    // An API token: a fuzzed password reset of an admin must not log the fuzzer out.
    adminToken: adminApi,
    userToken,
    victimId: victim.id,
    ownTokenId: own.body.token.id,
    clockNow: clock.now,
    freshToken: () => tokenFor(user.id, clock),
  };

  for (const [index, route] of ROUTES.entries()) {
    const name = `${route.method} ${route.path(new Gen(0), ctx).replace(/\?.*$/, '')}`;
    it(`${name}: ${CASES_PER_ROUTE} cases, no 5xx, every error coded`, async () => {
      const g = new Gen(FUZZ_SEED + index);
      const statuses = new Map<number, number>();
      for (let i = 0; i < CASES_PER_ROUTE; i++) {
        // Random probe outcomes so the backend switch sees every branch.
        probe.answers.pi = g.pick([
          { available: true },
          { available: false, reason: 'r', fix: 'f' },
          () => Promise.reject(new Error('x')),
        ]);
        const valid = route.valid(g, ctx);
        const opts: CallOptions = { address: `10.${g.int(4)}.${g.int(256)}.${g.int(256)}` };
        let path = route.path(g, ctx);
        if (route.method === 'GET') {
          // fetch cannot send a GET body; the malformed input of a GET is its query string.
          if (g.chance(0.7))
            path += `${path.includes('?') ? '&' : '?'}${encode(g.string())}=${encode(JSON.stringify(g.json()) ?? '')}`;
          if (g.chance(0.2)) opts.headers = { 'Content-Type': g.contentType() ?? 'x/y' };
        } else {
          const style = g.int(10);
          if (style < 5) opts.body = g.mutate(valid);
          else if (style < 8) opts.raw = g.raw(valid);
          else if (style < 9) opts.body = g.json();
          const ct = g.contentType();
          if (ct !== 'application/json') opts.contentType = ct;
        }

        const authRoll = g.int(20);
        if (authRoll === 0) {
          // Unauthenticated.
        } else if (authRoll === 1) {
          opts.headers = {
            ...opts.headers,
            Authorization: headerSafe(g.pick(['Bearer', 'Bearer  ', 'Basic x', `Bearer ${g.string()}`, 'bearer sy_x'])),
          };
        } else if (authRoll === 2) {
          opts.cookie = ctx.userToken;
          opts.origin = g.pick(['https://evil.test', null, 'null', 'http://localhost']);
        } else if (route.auth === 'fresh') {
          opts.token = await ctx.freshToken();
        } else if (route.auth === 'admin' || (route.auth === 'user' && g.chance(0.3))) {
          opts.token = ctx.adminToken;
        } else if (route.auth === 'user') {
          opts.token = ctx.userToken;
        }

        // Any route: only the error shape is read, each field checked before use.
        const r = await call<{ error?: { code?: unknown; message?: unknown; field?: unknown } } | null>(
          app,
          route.method,
          path,
          opts,
        );
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        const where = `seed=${FUZZ_SEED + index} case=${i} ${route.method} ${path.slice(0, 120)} status=${r.status} request=${JSON.stringify(opts).slice(0, 300)} response=${r.text.slice(0, 300)}`;
        expect(r.status, where).toBeLessThan(500);
        if (r.status >= 400) {
          const err = r.body?.error;
          expect(typeof err?.code === 'string' && KNOWN_CODES.has(err.code), where).toBe(true);
          expect(typeof err?.message === 'string' && err.message.length > 0, where).toBe(true);
          if (err?.field !== undefined) expect(typeof err.field, where).toBe('string');
          if (r.status === 429) expect(r.headers.get('Retry-After'), where).toMatch(/^\d+$/);
        } else if (r.status !== 204) {
          expect(r.body, where).not.toBeNull();
        }
        clock.advance(1000);
      }
      // Guards the harness itself: a fuzzer that only ever reaches one branch (say, 401) proves little.
      const seen = [...statuses.keys()];
      if (route.path(new Gen(0), ctx) !== '/healthz')
        expect(seen.length, JSON.stringify([...statuses])).toBeGreaterThan(1);
      if (route.method !== 'GET' && route.path(new Gen(0), ctx) !== '/api/auth/logout') expect(seen).toContain(400);
      if (route.auth !== 'none') expect(seen).toContain(401);
    });
  }
});
