import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import type { StartRunnerSchema } from '../src/sessions/schemas.ts';
import type { z } from '@hono/zod-openapi';
import { adminWithToken, expectError, userWithToken } from './helpers.ts';
import {
  call,
  connectLaunched,
  createSession,
  FakeRunner,
  hubContext,
  hubStub,
  postMessage,
  SseReader,
  statusStates,
  until,
  type HubTestContext,
  type SessionDetail,
  setSettings,
} from './hub-helpers.ts';

// POST /api/sessions/:id/start: a runner started ahead of the first message, against a fake
// launcher and a scripted runner on the real hub, routes and D1 in workerd.

type StartRunner = z.infer<typeof StartRunnerSchema>;

afterEach(() => setHubRuntimeForTests({}));

const start = (ctx: HubTestContext, sid: string, token = ctx.token) =>
  call<StartRunner>(ctx.app, 'POST', `/api/sessions/${sid}/start`, { token });

const stateOf = async (ctx: HubTestContext, sid: string) =>
  (await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token })).body.state;

const connect = async (ctx: HubTestContext, sid: string) => (await connectLaunched(ctx, sid)).runner;

/** Runner slots the session holds in D1. */
const slotsOf = async (sid: string) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM runner_slots WHERE session_id = ?').bind(sid).first<{ n: number }>())
    ?.n;

/** A session whose runner was started ahead under these settings and has dialled in (no message yet). */
async function startedAhead(settings: Record<string, unknown>) {
  const ctx = await hubContext();
  await setSettings(ctx, settings);
  const sid = await createSession(ctx);
  await start(ctx, sid);
  return { ctx, sid, runner: await connect(ctx, sid) };
}

describe('starting a runner ahead of the first message', () => {
  it('launches once with the settings of now; the first message then goes straight to the ready runner', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    const first = await start(ctx, sid);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toEqual({ started: true });
    const launch = await until('a launch', () => ctx.launcher.startsFor(sid)[0]);
    expect(launch.limits).toEqual({ idleMs: 15 * 60_000, maxLifetimeMs: 480 * 60_000 });
    expect(await stateOf(ctx, sid)).toBe('starting');

    // Asking again while it starts, and once it is up, starts nothing more, nor touches the slot.
    const claimedAt = () =>
      env.DB.prepare('SELECT claimed_at FROM runner_slots WHERE session_id = ?').bind(sid).first('claimed_at');
    const claimed = await claimedAt();
    ctx.clock.advance(1_000);
    expect((await start(ctx, sid)).body).toEqual({ started: false });
    expect(await claimedAt()).toBe(claimed);
    const runner = await connect(ctx, sid);
    const again = await start(ctx, sid);
    expect([again.status, again.body]).toEqual([200, { started: false }]);
    expect(await stateOf(ctx, sid)).toBe('ready');
    expect(runner.of('user_message')).toEqual([]);

    const sending = postMessage(ctx, sid, 'hello');
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    const sent = await sending;
    expect([sent.status, sent.body.messageId]).toEqual([202, um.messageId]);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
    await sse.waitFor('idle', (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle');
    expect(statusStates(sse.events)).toEqual(['starting', 'ready', 'busy', 'idle']);
    expect(ctx.launcher.startsFor(sid)).toHaveLength(1);
    await sse.close();
    runner.close();
  });

  it('shows ready only once the runner says its CLI is up, so a message then is answered at once', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    await start(ctx, sid);
    const launch = await until('a launch', () => ctx.launcher.startsFor(sid)[0]);
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    runner.hello(sid, { cli: 'starting' });
    await runner.waitFor('welcome');
    const snap = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
    expect([snap.body.state, snap.body.stateReason]).toEqual(['starting', 'waiting for the agent CLI to start']);
    runner.send({ type: 'status', state: 'ready', cli: 'running' });
    await sse.waitFor('ready', (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'ready');
    expect(sse.events.filter((e) => e.event === 'session.status').map((e) => e.data)).toEqual([
      { type: 'session.status', state: 'starting' },
      { type: 'session.status', state: 'starting', reason: 'waiting for the agent CLI to start' },
      { type: 'session.status', state: 'ready' },
    ]);
    await sse.close();
    runner.close();
  });

  for (const order of ['start first', 'message first'] as const) {
    it(`a message sent while the runner starts is delivered after the welcome; one launch, one slot (${order})`, async () => {
      const ctx = await hubContext();
      const sid = await createSession(ctx);
      // The start and the message race for the slot; whichever launches, the other joins it.
      const both =
        order === 'start first'
          ? Promise.all([start(ctx, sid), postMessage(ctx, sid, 'hi')])
          : Promise.all([postMessage(ctx, sid, 'hi'), start(ctx, sid)]).then(([m, s]) => [s, m] as const);
      const [, sent] = await both;
      expect(sent.status, sent.text).toBe(202);
      const runner = await connect(ctx, sid);
      const um = await runner.waitFor('user_message');
      expect(um.messageId).toBe(sent.body.messageId);
      expect(ctx.launcher.startsFor(sid)).toHaveLength(1);
      expect(await slotsOf(sid)).toBe(1);
      runner.close();
    });
  }

  it('a runner started and never used stops at the unused limit set now and gives its slot back', async () => {
    const { ctx, sid, runner } = await startedAhead({ sessionIdleMinutes: 15, unusedRunnerIdleMinutes: 5 });
    // Set after the start: this launch keeps the limits it started with.
    await setSettings(ctx, { unusedRunnerIdleMinutes: 10 });
    ctx.clock.advance(5 * 60_000 - 1_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect(runner.of('shutdown')).toEqual([]);
    ctx.clock.advance(1_001);
    await runDurableObjectAlarm(hubStub(sid));
    expect((await runner.waitFor('shutdown')).reason).toBe('unused for 5 min');
    runner.send({ type: 'bye', reason: 'hub_shutdown', lastSeq: 0 });
    await until('stopped', async () => ((await stateOf(ctx, sid)) === 'stopped' ? true : undefined));
    await until('the slot back', async () => ((await slotsOf(sid)) === 0 ? true : undefined));
  });

  it('a started runner that has answered a message keeps the session idle limit, not the unused one', async () => {
    const { ctx, sid, runner } = await startedAhead({ sessionIdleMinutes: 15, unusedRunnerIdleMinutes: 5 });
    const sending = postMessage(ctx, sid, 'hello');
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    await sending;
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
    await until('idle', async () => ((await stateOf(ctx, sid)) === 'idle' ? true : undefined));
    ctx.clock.advance(14 * 60_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect(await stateOf(ctx, sid)).toBe('idle');
    expect(runner.of('shutdown')).toEqual([]);
    ctx.clock.advance(60_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    expect((await runner.waitFor('shutdown')).reason).toBe('idle for 15 min');
    runner.close();
  });

  it("is for the owner: 401 without a token, 403 from a foreign page with the owner's cookie, 404 for another user's session (as for one that does not exist), 403 for an admin", async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/start`), 401, 'unauthenticated');
    const other = await userWithToken(ctx.clock);
    expectError(await start(ctx, sid, other.token), 404, 'not_found');
    const admin = await adminWithToken(ctx.clock);
    expectError(await start(ctx, sid, admin.token), 403, 'forbidden');
    expectError(await start(ctx, '01JZZZZZZZZZZZZZZZZZZZZZZZ'), 404, 'not_found');
    // A page elsewhere cannot start runners with the owner's cookie.
    const forged = await call(ctx.app, 'POST', `/api/sessions/${sid}/start`, {
      cookie: ctx.token,
      origin: 'https://evil.test',
    });
    expectError(forged, 403, 'csrf_rejected');
    expect(ctx.launcher.starts).toEqual([]);
  });

  it('counts against the runner caps: 429 runner_limit naming the cap, with Retry-After, and nothing launched', async () => {
    const ctx = await hubContext();
    await setSettings(ctx, { maxLiveRunnersPerUser: 1 });
    const a = await createSession(ctx);
    const b = await createSession(ctx);
    expect((await start(ctx, a)).status).toBe(202);
    const refused = await start(ctx, b);
    expect(expectError(refused, 429, 'runner_limit').field).toBe('maxLiveRunnersPerUser');
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(ctx.launcher.startsFor(b)).toEqual([]);
    expect(await stateOf(ctx, b)).toBe('stopped');
  });
});
