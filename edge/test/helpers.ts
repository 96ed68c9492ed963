import { env } from 'cloudflare:workers';
import { createApp } from '../src/app.ts';
import { hashPassword, verifyPassword } from '../src/auth/password.ts';
import { issueToken } from '../src/auth/token-store.ts';
import { SESSION_TTL_MS, type TokenKind } from '../src/auth/tokens.ts';
import type { AppDeps } from '../src/context.ts';
import { newId } from '../src/ids.ts';
import type { BackendProbe, ProbeResult } from '../src/settings/backend-probe.ts';
import type { Role } from '../src/users/schemas.ts';
import type { z } from 'zod';
import type { AuditPageSchema } from '../src/audit/schemas.ts';
import type { LoginResultSchema } from '../src/auth/schemas.ts';
import type { CreatedTokenSchema } from '../src/tokens/schemas.ts';
import { ErrorBodySchema } from '../src/errors.ts';

export const ORIGIN = 'http://localhost';
export const DEFAULT_PASSWORD = 'correct horse battery staple';

/** A clock tests move by hand: expiry and lockouts without sleeping. */
export class FakeClock {
  t = Date.UTC(2027, 0, 1);
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Records every backend it was asked about; answers from a table. */
export class SpyProbe implements BackendProbe {
  calls: string[] = [];
  answers: Partial<Record<'claude' | 'pi', ProbeResult | (() => Promise<ProbeResult>)>>;
  constructor(answers: SpyProbe['answers'] = {}) {
    this.answers = answers;
  }
  async probe(backend: 'claude' | 'pi'): Promise<ProbeResult> {
    this.calls.push(backend);
    const a = this.answers[backend] ?? { available: true, version: '1.0.0' };
    return typeof a === 'function' ? a() : a;
  }
}

export function makeApp(overrides: Partial<AppDeps> & { probe?: BackendProbe } = {}) {
  const clock = new FakeClock();
  const probe = overrides.probe ?? new SpyProbe();
  const app = createApp({ clock: clock.now, probeFor: () => probe, ...overrides });
  return { app, clock, probe };
}

export type TestApp = ReturnType<typeof makeApp>['app'];

let counter = 0;
/** Unique per call: storage is shared by all tests in a file. */
export function uniq(prefix = 'u'): string {
  counter += 1;
  return `${prefix}${counter}x${Math.floor(Math.random() * 1e6)}`;
}

let defaultHash: Promise<string> | undefined;

/** Inserts a user directly (one PBKDF2 per file for the default password, not per user). */
export async function createUser(
  opts: { username?: string; password?: string; role?: Role; disabled?: boolean; now?: number } = {},
): Promise<{ id: string; username: string; password: string; role: Role }> {
  const username = opts.username ?? uniq();
  const password = opts.password ?? DEFAULT_PASSWORD;
  const role = opts.role ?? 'user';
  const hash =
    password === DEFAULT_PASSWORD
      ? await (defaultHash ??= hashPassword(DEFAULT_PASSWORD))
      : await hashPassword(password);
  const now = opts.now ?? Date.UTC(2027, 0, 1);
  const id = newId(now);
  await env.DB.prepare(
    'INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
    .bind(id, username, hash, role, opts.disabled ? 1 : 0, now, now)
    .run();
  return { id, username, password, role };
}

/** The user's stored password hash, as the routes that issue tokens have checked it. */
export async function passwordHashOf(userId: string): Promise<string> {
  const row = await env.DB.prepare('SELECT password_hash FROM users WHERE id = ?')
    .bind(userId)
    .first<{ password_hash: string }>();
  if (row === null) throw new Error(`no user ${userId}`);
  return row.password_hash;
}

/** A live token for a user without going through login (no PBKDF2, no throttle). */
export async function tokenFor(
  userId: string,
  clock: FakeClock,
  opts: { kind?: TokenKind; ttlMs?: number; name?: string } = {},
): Promise<string> {
  const kind = opts.kind ?? 'session';
  const issued = await issueToken(env.DB, {
    userId,
    kind,
    name: opts.name ?? (kind === 'api' ? uniq('t') : null),
    now: clock.now(),
    ttlMs: opts.ttlMs ?? SESSION_TTL_MS,
    passwordHash: await passwordHashOf(userId),
  });
  if (issued === null) throw new Error(`tokenFor: user ${userId} is disabled`);
  return issued.secret;
}

export async function adminWithToken(clock: FakeClock) {
  const user = await createUser({ role: 'admin' });
  return { user, token: await tokenFor(user.id, clock) };
}

export async function userWithToken(clock: FakeClock) {
  const user = await createUser({ role: 'user' });
  return { user, token: await tokenFor(user.id, clock) };
}

export interface CallOptions {
  body?: unknown;
  /** Sent verbatim, with the given content type (default application/json). */
  raw?: string;
  contentType?: string | null;
  token?: string;
  cookie?: string;
  origin?: string | null;
  address?: string;
  headers?: Record<string, string>;
  base?: string;
  env?: Partial<Env>;
}

/**
 * `B`: the shape the test expects the JSON body to have (every route answers its own); the body
 * is not checked against it, the test's assertions do that. Without one the body is `unknown`.
 */
export interface CallResult<B = unknown> {
  status: number;
  headers: Headers;
  /** The parsed JSON body, null when there was none or it did not parse. */
  body: B;
  text: string;
}

export async function call<B = unknown>(
  app: TestApp,
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<CallResult<B>> {
  const headers = new Headers(opts.headers);
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && opts.contentType !== null)
    headers.set('Content-Type', opts.contentType ?? 'application/json');
  if (opts.token !== undefined) headers.set('Authorization', `Bearer ${opts.token}`);
  // The name the app uses for that origin: `__Host-` over https.
  const cookieName = (opts.base ?? ORIGIN).startsWith('https:') ? '__Host-sy_session' : 'sy_session';
  if (opts.cookie !== undefined) headers.set('Cookie', `${cookieName}=${opts.cookie}`);
  const base = opts.base ?? ORIGIN;
  // Same-origin by default for cookie requests, like a browser page of this app would send.
  const origin = opts.origin === undefined ? (opts.cookie !== undefined ? base : null) : opts.origin;
  if (origin !== null) headers.set('Origin', origin);
  if (opts.address !== undefined) headers.set('CF-Connecting-IP', opts.address);
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = body;
  const res = await app.request(`${base}${path}`, init, { ...env, ...opts.env });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  // The test states the shape it expects (B); its assertions check it.
  return { status: res.status, headers: res.headers, body: parsed as B, text };
}

/** Asserts the API's error shape and returns it. */
export function expectError(r: CallResult<unknown>, status: number, code?: string): ApiErrorBody {
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  const parsed = ErrorBodySchema.safeParse(r.body);
  if (!parsed.success) throw new Error(`not an error body: ${r.text}`);
  const err = parsed.data.error;
  if (code !== undefined && err.code !== code) throw new Error(`expected code ${code}, got ${err.code}: ${r.text}`);
  return err;
}

// Bodies the tests read, from the routes' own schemas.
/** What a route answers for any error (edge/src/errors.ts). */
export type ErrorResponse = z.infer<typeof ErrorBodySchema>;
export type ApiErrorBody = ErrorResponse['error'];
export type LoginResult = z.infer<typeof LoginResultSchema>;
export type AuditPage = z.infer<typeof AuditPageSchema>;
export type CreatedToken = z.infer<typeof CreatedTokenSchema>;

/**
 * A password check held open until released: the request has read the account and checked the
 * password, and waits there while the test changes the account.
 */
export function heldVerifier() {
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let entered!: () => void;
  const inside = new Promise<void>((r) => {
    entered = r;
  });
  const verify = async (password: string, stored: string) => {
    const ok = await verifyPassword(password, stored);
    entered();
    await held;
    return ok;
  };
  return { verify, release, inside };
}
