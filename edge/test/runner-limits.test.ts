import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { CREATE_SESSION_RULE } from '../src/sessions/routes.ts';
import { adminWithToken, expectError, userWithToken } from './helpers.ts';
import { call, createSession, hubContext, launchAndConnect, postMessage, until, setSettings } from './hub-helpers.ts';

const slotCount = async (userId?: string) =>
  (
    await (userId === undefined
      ? env.DB.prepare('SELECT count(*) AS n FROM runner_slots')
      : env.DB.prepare('SELECT count(*) AS n FROM runner_slots WHERE user_id = ?').bind(userId)
    ).first<{ n: number }>()
  )?.n ?? 0;

describe('settings maxLiveRunnersPerUser and maxLiveRunners', () => {
  it('default to 5 and 50, are validated naming the field, and every change is audited', async () => {
    const ctx = await hubContext();
    const admin = await adminWithToken(ctx.clock);
    const put = (body: unknown) => call(ctx.app, 'PUT', '/api/admin/settings', { token: admin.token, body });
    await put({ maxLiveRunnersPerUser: 5, maxLiveRunners: 50 });
    const got = await call(ctx.app, 'GET', '/api/admin/settings', { token: admin.token });
    expect(got.body).toMatchObject({ maxLiveRunnersPerUser: 5, maxLiveRunners: 50 });
    expect(expectError(await put({ maxLiveRunnersPerUser: 0 }), 400, 'invalid_request').field).toBe(
      'maxLiveRunnersPerUser',
    );
    expect(expectError(await put({ maxLiveRunners: 1.5 }), 400).field).toBe('maxLiveRunners');
    expect(expectError(await put({ maxLiveRunners: 'many' }), 400).field).toBe('maxLiveRunners');
    expect(expectError(await put({ maxLiveRunnersPerUser: 60 }), 400).field).toBe('maxLiveRunnersPerUser');
    expect((await put({ maxLiveRunnersPerUser: 3 })).status).toBe(200);
    const audit = await env.DB.prepare(
      "SELECT before, after FROM audit_log WHERE action = 'settings.update' ORDER BY id DESC LIMIT 1",
    ).first<{ before: string; after: string }>();
    expect([JSON.parse(audit!.before), JSON.parse(audit!.after)]).toEqual([
      { maxLiveRunnersPerUser: 5 },
      { maxLiveRunnersPerUser: 3 },
    ]);
  });
});

describe('runner caps', () => {
  it('parallel messages to many sessions start at most maxLiveRunnersPerUser runners; the rest are 429 runner_limit', async () => {
    const ctx = await hubContext();
    await setSettings(ctx, { maxLiveRunnersPerUser: 2, maxLiveRunners: 50 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await createSession(ctx));
    const results = await Promise.all(ids.map((id, i) => postMessage(ctx, id, 'go', { clientMessageId: `m${i}` })));
    const accepted = results.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(2);
    for (const r of results.filter((x) => x.status !== 202)) {
      const err = expectError(r, 429, 'runner_limit');
      expect(err.field).toBe('maxLiveRunnersPerUser');
      expect(err.message).toBe(
        'maxLiveRunnersPerUser: you already have 2 live runners; send again when one has stopped (a runner stops once its session has been unused for a while, or is deleted)',
      );
      expect(r.headers.get('Retry-After')).toMatch(/^\d+$/);
    }
    await until('two launches', () => ctx.launcher.starts.length >= 2 || undefined);
    expect(new Set(ctx.launcher.starts.map((s) => s.sessionId)).size).toBe(2);
    expect(await slotCount(ctx.user.id)).toBe(2);

    // A refused session stays usable: once a runner frees up, the same message goes through.
    const launched = ids.filter((_, i) => results[i]?.status === 202);
    const refusedIndex = results.findIndex((r) => r.status === 429);
    const refused = ids[refusedIndex]!;
    expectError(await postMessage(ctx, refused, 'go', { clientMessageId: `m${refusedIndex}` }), 429, 'runner_limit');
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${launched[0]}`, { token: ctx.token })).status).toBe(204);
    const again = await postMessage(ctx, refused, 'go', { clientMessageId: `m${refusedIndex}` });
    expect(again.status).toBe(202);
    expect(again.body.duplicate).toBe(false);
    await until('the refused session to launch', () => ctx.launcher.startsFor(refused).length === 1 || undefined);
  });

  it('a runner that stops gives its slot back', async () => {
    const ctx = await hubContext();
    await setSettings(ctx, { maxLiveRunnersPerUser: 1, maxLiveRunners: 50 });
    const a = await createSession(ctx);
    const b = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, a);
    expectError(await postMessage(ctx, b, 'hi'), 429, 'runner_limit');
    runner.send({ type: 'bye', reason: 'idle', lastSeq: runner.seq });
    await until('the slot to be given back', async () => (await slotCount(ctx.user.id)) === 0 || undefined);
    expect((await postMessage(ctx, b, 'hi')).status).toBe(202);
  });

  it('maxLiveRunners caps everyone together', async () => {
    const ctx = await hubContext();
    await env.DB.prepare('DELETE FROM runner_slots').run();
    await setSettings(ctx, { maxLiveRunnersPerUser: 3, maxLiveRunners: 3 });
    const other = await userWithToken(ctx.clock);
    for (let i = 0; i < 2; i++) expect((await postMessage(ctx, await createSession(ctx), 'x')).status).toBe(202);
    const theirs = [await createSession(ctx, other.token), await createSession(ctx, other.token)];
    expect((await postMessage(ctx, theirs[0]!, 'x', {}, other.token)).status).toBe(202);
    const err = expectError(await postMessage(ctx, theirs[1]!, 'x', {}, other.token), 429, 'runner_limit');
    expect(err.field).toBe('maxLiveRunners');
    expect(err.message).toMatch(/all users together already have 3 live runners/);
    await setSettings(ctx, { maxLiveRunnersPerUser: 5, maxLiveRunners: 50 });
  });

  it('creating sessions is rate limited per user (429 with Retry-After), and the window passes', async () => {
    const ctx = await hubContext();
    for (let i = 0; i < CREATE_SESSION_RULE.max; i++) await createSession(ctx);
    const r = await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: {} });
    expectError(r, 429, 'rate_limited');
    expect(Number(r.headers.get('Retry-After'))).toBe(CREATE_SESSION_RULE.windowMs / 1000);
    // Someone else is not affected.
    const other = await userWithToken(ctx.clock);
    expect((await call(ctx.app, 'POST', '/api/sessions', { token: other.token, body: {} })).status).toBe(201);
    ctx.clock.advance(CREATE_SESSION_RULE.windowMs);
    expect((await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: {} })).status).toBe(201);
  });
});
