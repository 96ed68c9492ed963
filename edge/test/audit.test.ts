import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../src/audit/schemas.ts';
import {
  adminWithToken,
  type AuditPage,
  call,
  DEFAULT_PASSWORD,
  expectError,
  makeApp,
  userWithToken,
} from './helpers.ts';

/** A page filtered to user.create: each entry's `after` records the new user, name included. */
type UserCreatePage = Omit<AuditPage, 'entries'> & { entries: Array<AuditEntry & { after: { username: string } }> };

const { app, clock } = makeApp();
let token = '';
let actor = { id: '', username: '' };

beforeAll(async () => {
  await env.DB.prepare('DELETE FROM audit_log').run();
  const admin = await adminWithToken(clock);
  token = admin.token;
  actor = { id: admin.user.id, username: admin.user.username };
  // Seven entries: five settings changes and two user creations, one minute apart.
  for (const minutes of [20, 21, 22, 23, 24]) {
    clock.advance(60_000);
    expect(
      (await call(app, 'PUT', '/api/admin/settings', { token, body: { sessionIdleMinutes: minutes } })).status,
    ).toBe(200);
  }
  for (const name of ['audited-one', 'audited-two']) {
    clock.advance(60_000);
    expect(
      (
        await call(app, 'POST', '/api/admin/users', {
          token,
          body: { username: name, password: 'long enough password', currentPassword: DEFAULT_PASSWORD },
        })
      ).status,
    ).toBe(201);
  }
});

describe('GET /api/admin/audit', () => {
  it('pages newest first with a cursor until the end', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${cursor}`;
      const r = await call<AuditPage>(app, 'GET', `/api/admin/audit${q}`, { token });
      expect(r.status).toBe(200);
      seen.push(...r.body.entries.map((e: { id: string }) => e.id));
      cursor = r.body.nextCursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(7);
    expect([...seen].sort().reverse()).toEqual(seen);
  });

  it('shows who, when, what, before and after', async () => {
    const r = await call<AuditPage>(app, 'GET', '/api/admin/audit?limit=1&action=settings.update', { token });
    expect(r.body.entries).toEqual([
      {
        id: expect.any(String),
        at: new Date(Date.UTC(2027, 0, 1) + 5 * 60_000).toISOString(),
        actor,
        action: 'settings.update',
        target: 'settings',
        before: { sessionIdleMinutes: 23 },
        after: { sessionIdleMinutes: 24 },
      },
    ]);
  });

  it('filters by action', async () => {
    const r = await call<UserCreatePage>(app, 'GET', '/api/admin/audit?action=user.create', { token });
    expect(r.body.entries.map((e: { after: { username: string } }) => e.after.username)).toEqual([
      'audited-two',
      'audited-one',
    ]);
    expect(r.body.nextCursor).toBeNull();
  });

  it('answers 400 for bad paging parameters', async () => {
    expect(expectError(await call(app, 'GET', '/api/admin/audit?limit=0', { token }), 400).field).toBe('limit');
    expect(expectError(await call(app, 'GET', '/api/admin/audit?limit=201', { token }), 400).field).toBe('limit');
    expect(expectError(await call(app, 'GET', '/api/admin/audit?limit=abc', { token }), 400).field).toBe('limit');
    expect(expectError(await call(app, 'GET', '/api/admin/audit?cursor=nope', { token }), 400).field).toBe('cursor');
    expect(expectError(await call(app, 'GET', '/api/admin/audit?action=login', { token }), 400).field).toBe('action');
    expect(expectError(await call(app, 'GET', '/api/admin/audit?sort=asc', { token }), 400).field).toBe('sort');
  });

  it('is for admins only', async () => {
    const user = await userWithToken(clock);
    expect(expectError(await call(app, 'GET', '/api/admin/audit', { token: user.token }), 403).message).toBe(
      'admin access required',
    );
    expectError(await call(app, 'GET', '/api/admin/audit'), 401);
  });
});
