import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { RUNNER_LINK_PING, RunnerCloseCode } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { mintRunnerToken, verifyRunnerToken } from '../src/runner-link/token.ts';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { transcriptKey } from '../src/hub/transcript-store.ts';
import type { HubCore } from '../src/hub/hub-core.ts';
import {
  call,
  createSession,
  FakeRunner,
  hubContext,
  hubStub,
  launchAndConnect,
  postMessage,
  SseReader,
  statusStates,
  transcriptFixture,
  until,
  type ErrorResponse,
  type HubTestContext,
  type SessionDetail,
  type SessionPage,
} from './hub-helpers.ts';

// The runner link against a fake runner (a WebSocket client in the test speaking the wire
// schemas) and a fake Launcher that records calls. Real workerd, D1, Durable Object, R2.

afterEach(() => setHubRuntimeForTests({}));

const SECRET = 'test-only-runner-token-secret-0123456789';

async function logIds(sessionId: string): Promise<Array<{ id: string; type: string; data: string }>> {
  return runInDurableObject(hubStub(sessionId), (_hub, state) =>
    state.storage.sql
      .exec<{ id: string; type: string; data: string }>('SELECT id, type, data FROM events ORDER BY id')
      .toArray(),
  );
}

async function snapshot(ctx: HubTestContext, sid: string) {
  const r = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
  expect(r.status).toBe(200);
  return r.body;
}

/** A turn that the fake runner accepts; returns the messageId. */
const answered = new WeakMap<FakeRunner, Set<string>>();
async function acceptNext(runner: FakeRunner): Promise<string> {
  const seen = answered.get(runner) ?? new Set<string>();
  answered.set(runner, seen);
  const um = await until('an unanswered user_message', () =>
    runner.of('user_message').find((m) => !seen.has(m.messageId)),
  );
  seen.add(um.messageId);
  runner.send({ type: 'accepted', inReplyTo: um.messageId });
  return um.messageId;
}

/** A runner whose link dropped after the hub stored (and acked) deltas 1..3 of an accepted turn. */
async function linkDroppedAfterThreeEvents() {
  const ctx = await hubContext();
  const sid = await createSession(ctx);
  const { runner } = await launchAndConnect(ctx, sid);
  const mid = await acceptNext(runner);
  runner.events(
    [1, 2, 3].map((i) => ({ type: 'text.delta' as const, index: 0, text: `${i}` })),
    mid,
  );
  await runner.waitAck(3);
  const token = runner.of('welcome')[0]?.runnerToken ?? '';
  runner.ws.close(1001, 'going away');
  await until('the hub to see the link down', async () => (await snapshot(ctx, sid)).runner?.connected === false);
  return { ctx, sid, mid, token, runner };
}

describe('runner link: hello, welcome, sequencing', () => {
  it('welcomes a fresh runner with ackedSeq 0 and a renewed token, then delivers the queued message', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, messageId, launch } = await launchAndConnect(ctx, sid);
    expect(launch).toMatchObject({
      sessionId: sid,
      backend: 'claude',
      hubUrl: 'ws://localhost/internal/runner/connect',
      model: null,
    });
    expect(launch.limits).toEqual({ idleMs: 15 * 60_000, maxLifetimeMs: 480 * 60_000 });
    const welcome = runner.of('welcome')[0];
    expect(welcome?.ackedSeq).toBe(0);
    expect(welcome?.transcript).toBeUndefined();
    const renewed = await verifyRunnerToken(SECRET, welcome?.runnerToken ?? '', ctx.clock.now());
    expect(renewed).toMatchObject({ ok: true, claims: { sessionId: sid, launchId: launch.launchId } });
    const um = await runner.waitFor('user_message');
    expect(um).toMatchObject({ messageId, message: { text: 'hello' } });
    expect(runner.invalid).toEqual([]);
    runner.close();
  });

  it('acks only what it stored, dedupes a resent seq and refuses a gap', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events(
      [
        { type: 'text.delta', index: 0, text: 'a' },
        { type: 'text.delta', index: 0, text: 'b' },
      ],
      mid,
    );
    await runner.waitAck(2);
    // Resend 1..2 together with 3: 1 and 2 are duplicates, only 3 is new.
    runner.send({
      type: 'events',
      events: [1, 2, 3].map((seq) => ({
        seq,
        event: { type: 'text.delta' as const, index: 0, text: `r${seq}` },
        messageId: mid,
      })),
    });
    runner.seq = 3;
    await runner.waitAck(3);
    const deltas = (await logIds(sid)).filter((e) => e.type === 'text.delta').map((e) => JSON.parse(e.data).text);
    expect(deltas).toEqual(['a', 'b', 'r3']);
    // A gap is a protocol error.
    runner.send({ type: 'events', events: [{ seq: 5, event: { type: 'text.delta', index: 0, text: 'x' } }] });
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
  });

  it("acks a streaming turn's frames together and the frame that ends the turn at once", async () => {
    // Longer than the test: only the turn's end can bring an ack here.
    const ctx = await hubContext({ ackDelayMs: 600_000 });
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    const sse = await SseReader.open(ctx, sid);
    for (const text of ['a', 'b', 'c']) runner.events([{ type: 'text.delta', index: 0, text }], mid);
    await sse.waitFor('three deltas, stored and broadcast', () => sse.ofType('text.delta').length === 3);
    expect(runner.of('ack').filter((a) => a.seq >= 1)).toEqual([]);
    const [done] = runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(done ?? 0);
    // One ack covers the whole turn.
    expect(runner.of('ack').filter((a) => a.seq >= 1)).toEqual([{ type: 'ack', seq: 4 }]);
    await sse.close();
    runner.close();
  });

  it('acks frames that do not end a turn within the ack delay, one ack for those stored by then', async () => {
    const ctx = await hubContext({ ackDelayMs: 50 });
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.send({
      type: 'events',
      events: ['a', 'b'].map((text, i) => ({
        seq: i + 1,
        event: { type: 'text.delta' as const, index: 0, text },
        messageId: mid,
      })),
    });
    runner.seq = 2;
    await runner.waitAck(2);
    expect(runner.of('ack').filter((a) => a.seq >= 1)).toEqual([{ type: 'ack', seq: 2 }]);
    runner.close();
  });

  it('does not ack or broadcast events it failed to store; the resend is stored once', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    const sse = await SseReader.open(ctx, sid);
    await sse.waitFor('busy', (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'busy');
    // Make the next write fail.
    await runInDurableObject(hubStub(sid), (_h, state) =>
      state.storage.sql.exec('ALTER TABLE events RENAME TO events_away'),
    );
    runner.events([{ type: 'text.delta', index: 0, text: 'lost?' }], mid);
    // A frame after it that the hub answers in order: a resend of seq 0..0 is impossible, so
    // use a ping frame sent as JSON through the handler (not the auto-response string).
    runner.sendRaw('{"type":"ping" }');
    await until('pong after the failed frame', () => runner.received.filter((m) => m.type === 'pong').length >= 1);
    expect(runner.of('ack').filter((a) => a.seq >= 1)).toEqual([]);
    await runInDurableObject(hubStub(sid), (_h, state) =>
      state.storage.sql.exec('ALTER TABLE events_away RENAME TO events'),
    );
    // The runner resends seq 1 (it was never acked).
    runner.send({
      type: 'events',
      events: [{ seq: 1, event: { type: 'text.delta', index: 0, text: 'lost?' }, messageId: mid }],
    });
    await runner.waitAck(1);
    expect(runner.of('ack').filter((a) => a.seq >= 1)).toHaveLength(1);
    await sse.waitFor('the delta, once stored', (e) => e.event === 'text.delta');
    expect(sse.ofType('text.delta')).toHaveLength(1);
    expect((await logIds(sid)).filter((e) => e.type === 'text.delta')).toHaveLength(1);
    await sse.close();
    runner.close();
  });

  it('after a dropped link, welcomes the same runner with the seq it holds; the runner resends the rest', async () => {
    const { ctx, sid, mid, token, runner } = await linkDroppedAfterThreeEvents();
    const again = await FakeRunner.connect(ctx.app, { token, sessionId: sid, runnerId: runner.runnerId });
    again.seq = 5;
    again.hello(sid, { lastSeq: 5 });
    const welcome = await again.waitFor('welcome');
    expect(welcome.ackedSeq).toBe(3);
    expect(welcome.transcript).toBeUndefined();
    again.send({
      type: 'events',
      events: [4, 5].map((seq) => ({
        seq,
        event: { type: 'text.delta' as const, index: 0, text: `${seq}` },
        messageId: mid,
      })),
    });
    await again.waitAck(5);
    const deltas = (await logIds(sid)).filter((e) => e.type === 'text.delta').map((e) => JSON.parse(e.data).text);
    expect(deltas).toEqual(['1', '2', '3', '4', '5']);
    // The delivered turn was not sent again.
    expect(again.of('user_message')).toEqual([]);
    again.close();
  });

  it('takes frames sent right behind the hello, before the runner has the welcome; what it already holds is dropped', async () => {
    const { ctx, sid, mid, token, runner } = await linkDroppedAfterThreeEvents();
    // A runner that saw only the ack of seq 1 sends 2..5 in the same breath as its hello.
    const again = await FakeRunner.connect(ctx.app, { token, sessionId: sid, runnerId: runner.runnerId });
    again.seq = 5;
    again.hello(sid, { lastSeq: 5 });
    again.send({
      type: 'events',
      events: [2, 3, 4, 5].map((seq) => ({
        seq,
        event: { type: 'text.delta' as const, index: 0, text: `${seq}` },
        messageId: mid,
      })),
    });
    await again.waitAck(5);
    expect(again.received.map((m) => m.type).slice(0, 2)).toEqual(['welcome', 'ack']);
    expect(again.of('welcome')[0]?.ackedSeq).toBe(3);
    expect(again.closed).toBeUndefined();
    const deltas = (await logIds(sid)).filter((e) => e.type === 'text.delta').map((e) => JSON.parse(e.data).text);
    expect(deltas).toEqual(['1', '2', '3', '4', '5']);
    again.close();
  });

  it('refuses a hello whose lastSeq is below what the hub holds, or for another backend', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, launch } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'text.delta', index: 0, text: 'a' }], mid);
    await runner.waitAck(1);
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    const b = await FakeRunner.connect(ctx.app, { token: credential, sessionId: sid, runnerId: runner.runnerId });
    b.hello(sid, { lastSeq: 0 });
    expect((await b.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
    const c = await FakeRunner.connect(ctx.app, { token: credential, sessionId: sid, runnerId: runner.runnerId });
    c.hello(sid, { backend: 'pi' });
    expect((await c.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
    expect(launch.runnerToken).not.toBe(credential);
    runner.close();
  });

  it('closes with protocolError on invalid frames and frames before hello', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'x');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    const a = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    a.send({ type: 'status', state: 'ready', cli: 'running' });
    expect((await a.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
    const b = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    b.sendRaw('not json');
    expect((await b.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
    const c = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    c.sendRaw(JSON.stringify({ type: 'hello', protocol: 99 }));
    expect((await c.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
  });

  it('answers the heartbeat ping with pong', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    runner.sendRaw(RUNNER_LINK_PING);
    await until('pong', () => runner.received.some((m) => m.type === 'pong'));
    runner.close();
  });
});

describe('runner link: tokens', () => {
  it('refuses an expired token, a token for another session and a forged one with 4401', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const other = await createSession(ctx);
    await postMessage(ctx, sid, 'x');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);

    const wrongSession = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: other });
    expect(await wrongSession.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'runner token is for another session',
    });

    const forged = await mintRunnerToken('another-secret-that-is-long-enough-000000', {
      sessionId: sid,
      launchId: launch.launchId,
      expiresAt: ctx.clock.now() + 60_000,
      kind: 'bootstrap',
    });
    const bad = await FakeRunner.connect(ctx.app, { token: forged, sessionId: sid });
    expect(await bad.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'runner token invalid',
    });

    const none = await FakeRunner.connect(ctx.app, { token: 'garbage', sessionId: sid });
    expect((await none.waitClosed()).code).toBe(RunnerCloseCode.unauthorized);

    ctx.clock.advance(31 * 60_000); // default token lifetime is 30 min
    const late = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    expect(await late.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'runner token expired',
    });
  });

  it('refuses a runner of a replaced launch (4409) and any runner once the session has none (4404)', async () => {
    const ctx = await hubContext({ connectTimeoutMs: 60_000 });
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'one');
    const first = await until('first launch', () => ctx.launcher.startsFor(sid)[0]);
    // It never connects: the deadline fails the launch.
    ctx.clock.advance(61_000);
    expect(await runDurableObjectAlarm(hubStub(sid))).toBe(true);
    const gone = await FakeRunner.connect(ctx.app, { token: first.runnerToken, sessionId: sid });
    expect((await gone.waitClosed()).code).toBe(RunnerCloseCode.sessionGone);

    expect((await postMessage(ctx, sid, 'two')).status).toBe(202);
    await until('second launch', () => ctx.launcher.startsFor(sid)[1]);
    const stale = await FakeRunner.connect(ctx.app, { token: first.runnerToken, sessionId: sid });
    expect((await stale.waitClosed()).code).toBe(RunnerCloseCode.superseded);
  });

  it('refuses every runner link when RUNNER_TOKEN_SECRET is missing, and the launch fails saying so', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const token = await mintRunnerToken(SECRET, {
      sessionId: sid,
      launchId: 'x',
      expiresAt: ctx.clock.now() + 60_000,
      kind: 'bootstrap',
    });
    const r = await FakeRunner.connect(ctx.app, { token, sessionId: sid, envOverride: { RUNNER_TOKEN_SECRET: '' } });
    expect(await r.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'runner links are not configured',
    });
  });

  it('token replay: the launch token is spent by the first welcome; a second runner id is refused 4401 and gets nothing', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, launch, messageId } = await launchAndConnect(ctx, sid, 'secret plans');
    await runner.waitFor('user_message');
    // The attacker read the RunTask overrides (DescribeTasks, CloudTrail): the bootstrap token.
    const thief = await FakeRunner.connect(ctx.app, {
      token: launch.runnerToken,
      sessionId: sid,
      runnerId: 'attacker',
    });
    thief.hello(sid);
    expect(await thief.waitClosed()).toMatchObject({ code: RunnerCloseCode.unauthorized });
    // Even claiming the real runner's id (it is in the overrides too) does not help.
    const impostor = await FakeRunner.connect(ctx.app, {
      token: launch.runnerToken,
      sessionId: sid,
      runnerId: runner.runnerId,
    });
    impostor.hello(sid);
    expect((await impostor.waitClosed()).code).toBe(RunnerCloseCode.unauthorized);
    for (const t of [thief, impostor]) {
      expect(t.of('welcome')).toEqual([]);
      expect(t.of('user_message')).toEqual([]);
    }
    // The real runner was not displaced and still gets the next message.
    expect(runner.closed).toBeUndefined();
    runner.send({ type: 'accepted', inReplyTo: messageId });
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], messageId);
    await runner.waitAck(1);
    const next = await postMessage(ctx, sid, 'more plans');
    await runner.waitFor('user_message', (m) => m.messageId === next.body.messageId);
    // The credential it got is bound to its id: stolen, it still cannot serve under another one.
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    const claims = await verifyRunnerToken(SECRET, credential, ctx.clock.now());
    expect(claims).toMatchObject({ ok: true, claims: { kind: 'credential', runnerId: runner.runnerId } });
    const withCredential = await FakeRunner.connect(ctx.app, {
      token: credential,
      sessionId: sid,
      runnerId: 'attacker-2',
    });
    withCredential.hello(sid);
    expect(await withCredential.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'this credential belongs to another runner',
    });
    expect(runner.closed).toBeUndefined();
    // The launch request carried only the bootstrap token, never a credential.
    expect(await verifyRunnerToken(SECRET, launch.runnerToken, ctx.clock.now())).toMatchObject({
      ok: true,
      claims: { kind: 'bootstrap' },
    });
    runner.close();
  });

  it('runner identity: a hello whose task identity the launcher refuses binds nothing, and the real runner is welcomed', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'secret plans');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    const real = { amzDate: '20261207T040000Z', authorization: 'AWS4-HMAC-SHA256 real', securityToken: 'task' };
    const other = { amzDate: '20261207T040000Z', authorization: 'AWS4-HMAC-SHA256 other' };
    const refusal = 'the identity proof is not of the task this launch started';
    ctx.launcher.verdict = (runnerId) =>
      runnerId === 'real-runner'
        ? { ok: true }
        : { ok: false, error: { code: 'runner_identity_refused', message: refusal, retryable: false } };
    // The attacker read the overrides and says hello first: without a proof, and with another task's.
    for (const [runnerId, identity] of [
      ['attacker', undefined],
      ['real-runner-twin', other],
    ] as const) {
      const thief = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid, runnerId });
      thief.hello(sid, identity === undefined ? {} : { identity });
      expect(await thief.waitClosed()).toEqual({ code: RunnerCloseCode.unauthorized, reason: refusal });
      expect(thief.of('welcome')).toEqual([]);
      expect(thief.of('user_message')).toEqual([]);
    }
    // Nothing was bound: the real runner, dialling later with the same token, gets the launch.
    const runner = await FakeRunner.connect(ctx.app, {
      token: launch.runnerToken,
      sessionId: sid,
      runnerId: 'real-runner',
    });
    runner.hello(sid, { identity: real });
    const message = await runner.waitFor('user_message');
    expect(message.message.text).toBe('secret plans');
    // Every check was of this launch's own task, with what each hello carried.
    const ref = ctx.launcher.ref(1);
    expect(ctx.launcher.verifications).toEqual([
      { ref, runnerId: 'attacker', proof: undefined },
      { ref, runnerId: 'real-runner-twin', proof: other },
      { ref, runnerId: 'real-runner', proof: real },
    ]);
    // A reconnect with the credential from the welcome needs no proof: it travelled only over this link.
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    runner.close();
    const again = await FakeRunner.connect(ctx.app, { token: credential, sessionId: sid, runnerId: 'real-runner' });
    again.hello(sid, { lastSeq: 0 });
    await again.waitFor('welcome');
    expect(ctx.launcher.verifications).toHaveLength(3);
    again.close();
  });

  it('a session deleted while its launch is starting: a task the launcher answers with meanwhile is stopped', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const release = ctx.launcher.holdStarts();
    await postMessage(ctx, sid, 'x');
    await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    const core = await runInDurableObject(hubStub(sid), (hub) => (hub as unknown as { hub: HubCore }).hub);
    // The launcher answers while the delete is under way (it awaits R2 before it is done), and
    // the delete goes on once the hub has taken the answer: kept the task, or stopped it.
    const bucket = env.TRANSCRIPTS as unknown as { delete: (key: string) => Promise<void> };
    const remove = bucket.delete.bind(bucket);
    bucket.delete = async (key) => {
      release();
      await until('the start answered', () => core.meta.launch?.ref != null || ctx.launcher.stops.length > 0);
      return remove(key);
    };
    try {
      expect((await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: ctx.token })).status).toBe(204);
    } finally {
      bucket.delete = remove;
    }
    await until('the started task stopped', () => ctx.launcher.stops.find((s) => s.ref === ctx.launcher.ref(1)));
  });

  it('runner identity: a hello before the launcher answered is checked against the task it started; STS down is 1013', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const release = ctx.launcher.holdStarts();
    await postMessage(ctx, sid, 'x');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    // A hello that comes while RunTask has not answered (the local host spawns the task first) is
    // checked against the task once the launcher answers, not refused for having none yet.
    const ref = await runInDurableObject(hubStub(sid), async (hub) => {
      const core = (hub as unknown as { hub: HubCore }).hub;
      const launchRecord = core.meta.launch;
      if (launchRecord === null) throw new Error('no launch');
      const known = core.launchRef(launchRecord);
      release();
      return known;
    });
    expect(ref).toBe(ctx.launcher.ref(1));
    // STS being down is worth a retry (the runner's backoff), not a refusal for good.
    ctx.launcher.verdict = () => ({
      ok: false,
      error: { code: 'runner_identity_unavailable', message: 'STS answered 503', retryable: true },
    });
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid, runnerId: 'r1' });
    runner.hello(sid, { identity: { amzDate: '20261207T040000Z', authorization: 'AWS4-HMAC-SHA256 x' } });
    expect(await runner.waitClosed()).toEqual({ code: 1013, reason: 'STS answered 503' });
    expect(ctx.launcher.verifications.map((v) => v.ref)).toEqual([ctx.launcher.ref(1)]);
    ctx.launcher.verdict = () => ({ ok: true });
    const retry = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid, runnerId: 'r1' });
    retry.hello(sid);
    await retry.waitFor('welcome');
    retry.close();
  });

  it('token replay before the welcome: a launch token already bound to one runner id is refused (4401) for another', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'x');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    // The state a first hello leaves when its link dies before the welcome is sent (the window is
    // too short to hit reliably from outside): the launch is bound to runner-a, nobody welcomed.
    await runInDurableObject(hubStub(sid), (hub) => {
      const h = (
        hub as unknown as { hub: { meta: { launch: { bootstrapRunnerId?: string | null } | null }; saveMeta(): void } }
      ).hub;
      if (h.meta.launch === null) throw new Error('no launch');
      h.meta.launch.bootstrapRunnerId = 'runner-a';
      h.saveMeta();
    });
    const other = await FakeRunner.connect(ctx.app, {
      token: launch.runnerToken,
      sessionId: sid,
      runnerId: 'runner-b',
    });
    other.hello(sid);
    expect(await other.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'the launch token is bound to another runner',
    });
    expect(other.of('welcome')).toEqual([]);
    // The runner it is bound to may retry with it until its first welcome.
    const retry = await FakeRunner.connect(ctx.app, {
      token: launch.runnerToken,
      sessionId: sid,
      runnerId: 'runner-a',
    });
    retry.hello(sid);
    await retry.waitFor('welcome');
    retry.close();
  });

  it('renews the token over the link at half-life', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    await acceptNext(runner);
    ctx.clock.advance(15 * 60_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    const renewed = await runner.waitFor('token');
    const v = await verifyRunnerToken(SECRET, renewed.runnerToken, ctx.clock.now());
    expect(v.ok && v.claims.expiresAt).toBeGreaterThan(ctx.clock.now() + 29 * 60_000);
    runner.close();
  });
});

describe('messages and interrupts through the runner', () => {
  it('answers 409 while a turn runs, and 409 when the runner itself says busy', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    const busy = await postMessage<ErrorResponse>(ctx, sid, 'again');
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('conflict');
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(1);

    // The hub thinks the runner is free; the runner disagrees.
    const pending = postMessage(ctx, sid, 'third', { clientMessageId: 'c-3' });
    const um = await until('second user_message', () => runner.of('user_message')[1]);
    runner.send({ type: 'reject', inReplyTo: um.messageId, error: { code: 'busy', message: 'busy', retryable: true } });
    const refused = await pending;
    expect(refused.status).toBe(409);
    // Nothing was accepted: no message.user for it, and the same clientMessageId may be retried.
    const users = (await logIds(sid)).filter((e) => e.type === 'message.user');
    expect(users).toHaveLength(1);
    const retry = postMessage(ctx, sid, 'third', { clientMessageId: 'c-3' });
    const um2 = await until('third user_message', () => runner.of('user_message')[2]);
    runner.send({ type: 'accepted', inReplyTo: um2.messageId });
    expect((await retry).status).toBe(202);
    runner.close();
  });

  it("a message waiting for the runner's answer is stored as sent (an eviction in the wait keeps a true record)", async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const first = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], first);
    await runner.waitAck(1);
    const pending = postMessage(ctx, sid, 'second');
    const um = await until('second user_message', () => runner.of('user_message')[1]);
    const stored = await runInDurableObject(
      hubStub(sid),
      (_h, state) =>
        JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'hub'").one().v) as {
          turn: { messageId: string; sent: boolean } | null;
        },
    );
    expect(stored.turn).toMatchObject({ messageId: um.messageId, sent: true });
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    expect((await pending).status).toBe(202);
    runner.close();
  });

  it('a retried clientMessageId returns the same messageId and starts nothing', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const first = await postMessage(ctx, sid, 'hi', { clientMessageId: 'client-1' });
    expect(first.status).toBe(202);
    expect(first.body.duplicate).toBe(false);
    const again = await postMessage(ctx, sid, 'hi', { clientMessageId: 'client-1' });
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ messageId: first.body.messageId, duplicate: true });
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    runner.hello(sid);
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    // Retried while the turn runs: still the same id, no 409, nothing new.
    const third = await postMessage(ctx, sid, 'hi', { clientMessageId: 'client-1' });
    expect(third.body).toEqual({ messageId: first.body.messageId, duplicate: true });
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
    await runner.waitAck(1);
    const fourth = await postMessage(ctx, sid, 'hi', { clientMessageId: 'client-1' });
    expect(fourth.body).toEqual({ messageId: first.body.messageId, duplicate: true });
    expect(ctx.launcher.startsFor(sid)).toHaveLength(1);
    expect(runner.of('user_message')).toHaveLength(1);
    expect((await logIds(sid)).filter((e) => e.type === 'message.user')).toHaveLength(1);
    runner.close();
  });

  it('relays an interrupt to the runner; before delivery the hub ends the turn itself', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    // Not yet at any runner: the hub closes the turn with turn.done interrupted.
    const queued = await postMessage(ctx, sid, 'never mind');
    const early = await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: ctx.token });
    expect(early.status).toBe(202);
    let log = await logIds(sid);
    const done = log.filter((e) => e.type === 'turn.done').map((e) => JSON.parse(e.data));
    expect(done).toEqual([{ type: 'turn.done', stopReason: 'interrupted', messageId: queued.body.messageId }]);

    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    runner.hello(sid);
    await runner.waitFor('welcome');
    expect(runner.of('user_message')).toEqual([]);

    const post = postMessage(ctx, sid, 'long task');
    const mid = await acceptNext(runner);
    expect((await post).status).toBe(202);
    const pending = call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: ctx.token });
    const intr = await runner.waitFor('interrupt');
    runner.send({ type: 'accepted', inReplyTo: intr.requestId });
    expect((await pending).status).toBe(202);
    runner.events([{ type: 'turn.done', stopReason: 'interrupted' }], mid);
    await runner.waitAck(1);
    const none = await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: ctx.token });
    expect(none.status).toBe(409);
    log = await logIds(sid);
    expect(log.filter((e) => e.type === 'turn.done')).toHaveLength(2);
    runner.close();
  });
});

describe('transcripts', () => {
  it('stores a transcript in R2 (acked after the write) and hands it to the next runner in welcome', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    const t = transcriptFixture();
    runner.seq += 1;
    runner.send({ type: 'transcript', seq: runner.seq, transcript: t });
    await runner.waitAck(2);
    const stored = await env.TRANSCRIPTS.get(transcriptKey(sid));
    expect(await stored?.json()).toEqual(t);
    // The runner stops on its own (idle); the next message starts a fresh runner.
    runner.send({ type: 'bye', reason: 'idle', lastSeq: 2 });
    await until('stopped', async () => (await snapshot(ctx, sid)).state === 'stopped');
    expect((await postMessage(ctx, sid, 'again')).status).toBe(202);
    const second = await until('second launch', () => ctx.launcher.startsFor(sid)[1]);
    const next = await FakeRunner.connect(ctx.app, { token: second.runnerToken, sessionId: sid });
    next.hello(sid);
    const welcome = await next.waitFor('welcome');
    expect(welcome.transcript).toEqual(t);
    next.close();
  });
});

describe('a session deleted while its runner uploads a transcript', () => {
  it('keeps no transcript in R2 once the upload lands', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(1);
    // The upload is held at R2 until the delete has answered.
    const bucket = env.TRANSCRIPTS as unknown as { put: (...args: unknown[]) => Promise<unknown> };
    const put = bucket.put.bind(bucket);
    let entered = () => {};
    const inPut = new Promise<void>((r) => {
      entered = r;
    });
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let landed = false;
    bucket.put = async (...args) => {
      entered();
      await held;
      const stored = await put(...args);
      landed = true;
      return stored;
    };
    try {
      runner.seq += 1;
      runner.send({ type: 'transcript', seq: runner.seq, transcript: transcriptFixture() });
      await inPut;
      expect((await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: ctx.token })).status).toBe(204);
      release();
      await until('the upload landed and is gone', async () =>
        landed && (await env.TRANSCRIPTS.head(transcriptKey(sid))) === null ? true : undefined,
      );
    } finally {
      bucket.put = put;
    }
  });
});

describe('lifecycle', () => {
  it('stops an idle runner when the idle alarm fires: shutdown, bye, stopped, launcher.stop', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    const { runner, launch } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(1);
    // Not idle long enough yet.
    ctx.clock.advance(14 * 60_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect(runner.of('shutdown')).toEqual([]);
    ctx.clock.advance(60_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    const shutdown = await runner.waitFor('shutdown');
    expect(shutdown.reason).toBe('idle for 15 min');
    runner.send({ type: 'bye', reason: 'hub_shutdown', lastSeq: 1 });
    await sse.waitFor(
      'stopped',
      (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'stopped',
    );
    expect(statusStates(sse.events)).toEqual(['starting', 'busy', 'idle', 'stopping', 'stopped']);
    await until('launcher.stop', () => ctx.launcher.stops.find((s) => s.ref === ctx.launcher.ref(1)));
    expect(launch.launchId).toBeTruthy();
    expect((await snapshot(ctx, sid)).runner).toBeNull();
    await sse.close();
  });

  it('forces the stop when the runner does not say bye within the grace', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(1);
    ctx.clock.advance(15 * 60_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    await runner.waitFor('shutdown');
    ctx.clock.advance(31_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.sessionGone);
    expect((await snapshot(ctx, sid)).state).toBe('stopped');
    // The task's stop runs in the hub's waitUntil, after the alarm has returned.
    await until('launcher.stop', () => ctx.launcher.stops.find((s) => s.ref === ctx.launcher.ref(1)));
    expect(ctx.launcher.stops).toHaveLength(1);
  });

  it('reports a runner that never connects as failed, closes the waiting turn, and stops the task', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    const msg = await postMessage(ctx, sid, 'hello?');
    await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    await until('the ref recorded', async () => (await snapshot(ctx, sid)).runner?.ref === ctx.launcher.ref(1));
    ctx.clock.advance(180_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    const failed = await sse.waitFor(
      'failed',
      (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'failed',
    );
    expect((failed.data as { reason: string }).reason).toBe('the runner did not connect within 180 s');
    const done = sse.ofType('turn.done');
    expect(done.map((e) => e.data)).toEqual([
      {
        type: 'turn.done',
        stopReason: 'error',
        error: { code: 'runner_failed', message: 'the runner did not connect within 180 s', retryable: true },
        messageId: msg.body.messageId,
      },
    ]);
    await until('launcher.stop', () => ctx.launcher.stops.find((s) => s.ref === ctx.launcher.ref(1)));
    const row = await call<SessionPage>(ctx.app, 'GET', `/api/sessions`, { token: ctx.token });
    expect(row.body.sessions.find((s) => s.id === sid)).toMatchObject({ state: 'failed' });
    await sse.close();
  });

  it('reports a runner the launcher says has exited, without waiting for the deadline', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'hello?');
    await until('the ref recorded', async () => (await snapshot(ctx, sid)).runner?.ref === ctx.launcher.ref(1));
    ctx.launcher.states.set(ctx.launcher.ref(1), {
      state: 'stopped',
      exitCode: 3,
      reason: 'Essential container in task exited',
    });
    ctx.clock.advance(5_001);
    await runDurableObjectAlarm(hubStub(sid));
    const s = await snapshot(ctx, sid);
    expect(s.state).toBe('failed');
    expect(s.stateReason).toBe('the runner exited before connecting (exit code 3: Essential container in task exited)');
    expect(ctx.launcher.describes).toContain(ctx.launcher.ref(1));
  });

  it('a launch whose runner was refused for its task identity names the refusal when it fails', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'hello?');
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    // A deployment whose RUNNER_TASK_ROLE_ARN names another role refuses its own runners.
    const refusal = 'the identity proof is not of the task this launch started';
    ctx.launcher.verdict = () => ({
      ok: false,
      error: { code: 'runner_identity_refused', message: refusal, retryable: false },
    });
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    runner.hello(sid);
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.unauthorized);
    // The refused runner exits (hub_rejected); the launcher reports it stopped.
    ctx.launcher.states.set(ctx.launcher.ref(1), { state: 'stopped', exitCode: 3 });
    ctx.clock.advance(5_001);
    await runDurableObjectAlarm(hubStub(sid));
    const s = await snapshot(ctx, sid);
    expect(s.state).toBe('failed');
    expect(s.stateReason).toBe(
      `the runner exited before connecting (exit code 3); a hello with its token was refused: ${refusal}`,
    );
  });

  it('reports a launcher that cannot start a runner', async () => {
    const ctx = await hubContext();
    ctx.launcher.failStart = 'RunTask: capacity unavailable';
    const sid = await createSession(ctx);
    await postMessage(ctx, sid, 'hello?');
    await until('failed', async () => (await snapshot(ctx, sid)).state === 'failed');
    expect((await snapshot(ctx, sid)).stateReason).toBe('could not start a runner: RunTask: capacity unavailable');
    // The next message tries again.
    ctx.launcher.failStart = undefined;
    expect((await postMessage(ctx, sid, 'again')).status).toBe(202);
    await until('second launch', () => ctx.launcher.startsFor(sid)[1]);
  });

  it('a runner lost mid-turn: one turn.done from the hub after the reconnect grace, and the task is stopped', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'text.delta', index: 0, text: 'partial' }], mid);
    await runner.waitAck(1);
    runner.ws.close(1011, 'crash');
    await until('link down', async () => (await snapshot(ctx, sid)).runner?.connected === false);
    ctx.clock.advance(60_001);
    await runDurableObjectAlarm(hubStub(sid));
    const log = await logIds(sid);
    const done = log.filter((e) => e.type === 'turn.done').map((e) => JSON.parse(e.data));
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ stopReason: 'error', error: { code: 'runner_failed' }, messageId: mid });
    expect((await snapshot(ctx, sid)).state).toBe('failed');
    await until('launcher.stop', () => ctx.launcher.stops.length === 1);
  });

  it('a runner link lost with a restart of the hub (no close event): the same grace, then one turn.done', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'text.delta', index: 0, text: 'partial' }], mid);
    await runner.waitAck(1);
    // A deploy or a crash: the object restarts and its sockets are gone, with no webSocketClose.
    await runInDurableObject(hubStub(sid), (_hub, state) => state.abort('restart')).catch(() => undefined);
    await runner.waitClosed();
    expect((await snapshot(ctx, sid)).runner?.connected).toBe(true);
    // The next alarm (the token renewal's) finds no socket for the link: the grace starts then.
    ctx.clock.advance(15 * 60_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect((await snapshot(ctx, sid)).runner?.connected).toBe(false);
    ctx.clock.advance(60_001);
    await runDurableObjectAlarm(hubStub(sid));
    const done = (await logIds(sid)).filter((e) => e.type === 'turn.done').map((e) => JSON.parse(e.data));
    expect(done).toEqual([expect.objectContaining({ stopReason: 'error', messageId: mid })]);
    expect((await snapshot(ctx, sid)).state).toBe('failed');
    await until('launcher.stop', () => ctx.launcher.stops.length === 1);
  });

  it('a message sent while the runner is stopping waits for it and starts the next runner', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await runner.waitAck(1);
    ctx.clock.advance(15 * 60_000 + 1);
    await runDurableObjectAlarm(hubStub(sid));
    await runner.waitFor('shutdown');
    const queued = await postMessage(ctx, sid, 'one more');
    expect(queued.status).toBe(202);
    expect(runner.of('user_message')).toHaveLength(1);
    runner.send({ type: 'bye', reason: 'hub_shutdown', lastSeq: 1 });
    const second = await until('second launch', () => ctx.launcher.startsFor(sid)[1]);
    const next = await FakeRunner.connect(ctx.app, { token: second.runnerToken, sessionId: sid });
    next.hello(sid);
    const um = await next.waitFor('user_message');
    expect(um.messageId).toBe(queued.body.messageId);
    next.close();
  });

  it('reports events a runner lost before its bye', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await acceptNext(runner);
    runner.events([{ type: 'text.delta', index: 0, text: 'a' }], mid);
    await runner.waitAck(1);
    runner.send({
      type: 'bye',
      reason: 'buffer_overflow',
      lastSeq: 4,
      error: { code: 'buffer_overflow', message: 'event buffer full', retryable: false },
    });
    await until('failed', async () => (await snapshot(ctx, sid)).state === 'failed');
    const log = (await logIds(sid)).map((e) => JSON.parse(e.data));
    expect(log.find((e) => e.type === 'error')).toMatchObject({ code: 'runner_events_lost' });
    expect(log.filter((e) => e.type === 'turn.done')).toEqual([
      expect.objectContaining({ stopReason: 'error', error: expect.objectContaining({ code: 'runner_lost' }) }),
    ]);
  });
});
