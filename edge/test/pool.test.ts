import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import {
  encodeProofHeader,
  RUNNER_LINK_PING,
  RUNNER_PROOF_HEADER,
  RunnerCloseCode,
  WIRE_PROTOCOL_VERSION,
  type RunnerIdentityProof,
} from '@switchyard/protocol';
import { POOL_CLAIM_MAX_BYTES, PoolCloseCode, PoolToRunnerSchema, type PoolClaim } from '@switchyard/protocol/pool';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests, timingsFromEnv } from '../src/hub/runtime.ts';
import type { PoolLaunchRequest } from '../src/launchers/launcher.ts';
import { poolCoordinator, poolMaxAgeMs } from '../src/pool/config.ts';
import { REFILL_AFTER_CLAIM_MS, type PoolStatus } from '../src/pool/coordinator.ts';
import type { PooledRunner } from '../src/pool/plan.ts';
import { until } from '../../test/helpers/poll.ts';
import {
  adminWithToken,
  type AuditPage,
  call,
  makeApp,
  userWithToken,
  type FakeClock,
  type TestApp,
} from './helpers.ts';
import {
  createSession,
  endWithTranscript,
  FakeLauncher,
  FakeRunner,
  hubStub,
  launchAndConnect,
  postMessage,
  transcriptFixture,
} from './hub-helpers.ts';

// The warm runner pool in workerd: the real coordinator Durable Object, the real session hubs and
// routes, a launcher that records pooled starts, and scripted pooled runners that dial the real
// pool route with the token the coordinator minted.

class PoolLauncher extends FakeLauncher {
  pooled: PoolLaunchRequest[] = [];
  async startPooled(request: PoolLaunchRequest): Promise<string> {
    this.pooled.push(request);
    const ref = `pool-task-${request.runnerId}`;
    this.states.set(ref, { state: 'running' });
    return ref;
  }
}

/** A pooled runner as the real one behaves on its pool link: hello, then wait for a claim. */
class FakePooledRunner {
  claims: PoolClaim[] = [];
  closed: { code: number; reason: string } | undefined;
  readonly ws: WebSocket;
  readonly request: PoolLaunchRequest;
  constructor(ws: WebSocket, request: PoolLaunchRequest) {
    this.ws = ws;
    this.request = request;
    ws.addEventListener('message', (e) => {
      const text = typeof e.data === 'string' ? e.data : '';
      if (text === '{"type":"pong"}') return;
      this.claims.push(PoolToRunnerSchema.parse(JSON.parse(text)));
    });
    ws.addEventListener('close', (e) => {
      this.closed = { code: e.code, reason: e.reason };
    });
  }

  static async dial(
    app: TestApp,
    request: PoolLaunchRequest,
    token = request.poolToken,
    proof?: RunnerIdentityProof,
  ): Promise<FakePooledRunner> {
    const res = await app.request(
      'http://localhost/internal/runner/pool',
      {
        headers: {
          Upgrade: 'websocket',
          Authorization: `Bearer ${token}`,
          ...(proof !== undefined && { [RUNNER_PROOF_HEADER]: encodeProofHeader(proof) }),
        },
      },
      env,
    );
    const ws = res.webSocket;
    if (ws === null) throw new Error(`pool connect: HTTP ${res.status}`);
    ws.accept();
    return new FakePooledRunner(ws, request);
  }

  hello(): void {
    this.ws.send(
      JSON.stringify({
        type: 'pool_hello',
        runnerId: this.request.runnerId,
        backend: this.request.backend,
        model: this.request.model,
        cliVersion: 'fake 1.0',
        capabilities: { guard: 'loaded', sandbox: 'none' },
      }),
    );
  }
}

/** A pool of one claude runner, connected and idle. */
async function oneIdlePooled(): Promise<FakePooledRunner[]> {
  await setPool({ claude: 1 });
  const pooled = await connectPooled(new Set());
  await until('one idle pooled runner', async () => (await idleCount()) === 1);
  return pooled;
}

/**
 * Holds every hub's claim at the coordinator's door until released (a slow round trip to the
 * coordinator, cross-region in production): `entered` settles when a claim is waiting there.
 */
function holdClaims(): { entered: Promise<void>; release: () => void } {
  const namespace = env.POOL_COORDINATOR as unknown as { get: (...args: unknown[]) => unknown };
  const get = namespace.get.bind(namespace);
  let release!: () => void;
  const open = new Promise<void>((r) => {
    release = r;
  });
  let enter!: () => void;
  const entered = new Promise<void>((r) => {
    enter = r;
  });
  namespace.get = (...args: unknown[]) => {
    const stub = get(...args) as Record<string | symbol, unknown>;
    return new Proxy(stub, {
      get(target, key) {
        const value = target[key];
        if (key !== 'claim' || typeof value !== 'function')
          return typeof value === 'function' ? value.bind(target) : value;
        return async (...claimArgs: unknown[]) => {
          enter();
          await open;
          // Called as a method of the stub: an RPC method answers any property (`apply` too).
          return (target as unknown as { claim: (...a: unknown[]) => unknown }).claim(...claimArgs);
        };
      },
    });
  };
  return {
    entered,
    release: () => {
      namespace.get = get;
      release();
    },
  };
}

/** The session's logged turn.done events, as stop reason and message id. */
async function turnDones(sessionId: string): Promise<Array<{ stopReason: string; messageId: string }>> {
  const rows = await runInDurableObject(hubStub(sessionId), (_hub, state) =>
    state.storage.sql.exec<{ data: string }>("SELECT data FROM events WHERE type = 'turn.done' ORDER BY id").toArray(),
  );
  return rows.map((r) => {
    const { stopReason, messageId } = JSON.parse(r.data) as { stopReason: string; messageId: string };
    return { stopReason, messageId };
  });
}

/** The hub helpers' context acting as the test's plain user. */
function asUser() {
  return { ...ctx, token: ctx.user, user: { id: '', username: '' } };
}

/** The claimed runner dials the session's hub with the claim's token, as it does after a claim. */
async function dialHub(
  claimed: FakePooledRunner,
  claim: PoolClaim,
  sessionId: string,
  lastSeq = 0,
): Promise<FakeRunner> {
  const runner = await FakeRunner.connect(ctx.app, {
    token: claim.runnerToken,
    sessionId,
    runnerId: claimed.request.runnerId,
  });
  runner.hello(sessionId, { lastSeq });
  await runner.waitFor('welcome');
  return runner;
}

interface Ctx {
  app: TestApp;
  clock: FakeClock;
  launcher: PoolLauncher;
  admin: string;
  adminUser: { id: string; username: string };
  user: string;
}

let ctx: Ctx;

async function setPool(sizes: { claude?: number; pi?: number }) {
  const r = await call<PoolStatus>(ctx.app, 'PUT', '/api/admin/runner-pool', { token: ctx.admin, body: sizes });
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function idleCount(): Promise<number> {
  return (await poolCoordinator(env).status()).runners.filter((r) => r.state === 'idle').length;
}

/** Dials and says hello for every pooled launch not yet connected; returns the new runners. */
async function connectPooled(seen: Set<string>): Promise<FakePooledRunner[]> {
  const out: FakePooledRunner[] = [];
  for (const req of ctx.launcher.pooled) {
    if (seen.has(req.runnerId)) continue;
    seen.add(req.runnerId);
    const r = await FakePooledRunner.dial(ctx.app, req);
    r.hello();
    out.push(r);
  }
  return out;
}

beforeEach(async () => {
  const { app, clock } = makeApp();
  const launcher = new PoolLauncher();
  setHubRuntimeForTests({ clock: clock.now, launcherFor: () => launcher, timings: (e) => timingsFromEnv(e) });
  const admin = await adminWithToken(clock);
  const user = await userWithToken(clock);
  ctx = {
    app,
    clock,
    launcher,
    admin: admin.token,
    adminUser: { id: admin.user.id, username: admin.user.username },
    user: user.token,
  };
});

afterEach(async () => {
  // Drain: the coordinator is one object per deployment, shared by every test of this file.
  await setPool({ claude: 0, pi: 0 });
  await call(ctx.app, 'PUT', '/api/admin/settings', { token: ctx.admin, body: { llmBackend: 'claude' } });
  await poolCoordinator(env).poke(null);
  expect((await poolCoordinator(env).status()).runners).toEqual([]);
  setHubRuntimeForTests({});
});

describe('warm runner pool', () => {
  it('size 0 (the default) keeps no pooled runner and a first message launches cold', async () => {
    const status = await poolCoordinator(env).status();
    expect(status.sizes).toEqual({ claude: 0, pi: 0 });
    const sessionId = await createSession({ ...ctx, token: ctx.user, user: { id: '', username: '' } }, ctx.user);
    expect(
      (await postMessage({ ...ctx, token: ctx.user, user: { id: '', username: '' } }, sessionId, 'hi')).status,
    ).toBe(202);
    await until('a cold launch', () => ctx.launcher.startsFor(sessionId).length === 1);
    expect(ctx.launcher.pooled).toEqual([]);
  });

  it('audits a size change (who, the sizes before and after) and not a change to nothing', async () => {
    const poolEntries = async () => {
      const r = await call<AuditPage>(ctx.app, 'GET', '/api/admin/audit?action=pool.update&limit=200', {
        token: ctx.admin,
      });
      expect(r.status, r.text).toBe(200);
      return r.body.entries;
    };
    const before = (await poolEntries()).length;
    ctx.clock.advance(60_000);
    await setPool({ claude: 2 });
    await setPool({ claude: 2 });
    ctx.clock.advance(60_000);
    await setPool({ claude: 1, pi: 3 });
    const entries = await poolEntries();
    expect(entries).toHaveLength(before + 2);
    expect(entries.slice(0, 2)).toEqual([
      {
        id: expect.any(String),
        at: new Date(ctx.clock.now()).toISOString(),
        actor: ctx.adminUser,
        action: 'pool.update',
        target: 'runner-pool',
        before: { claude: 2, pi: 0 },
        after: { claude: 1, pi: 3 },
      },
      {
        id: expect.any(String),
        at: new Date(ctx.clock.now() - 60_000).toISOString(),
        actor: ctx.adminUser,
        action: 'pool.update',
        target: 'runner-pool',
        before: { claude: 0 },
        after: { claude: 2 },
      },
    ]);
  });

  it('fills to N, hands a new session a pooled runner with a fresh session token, and refills', async () => {
    const status = await setPool({ claude: 2 });
    expect(status.runners).toHaveLength(2);
    expect(ctx.launcher.pooled).toHaveLength(2);
    for (const req of ctx.launcher.pooled) {
      expect(req.backend).toBe('claude');
      expect(req.poolUrl).toBe('ws://localhost/internal/runner/pool');
    }
    const seen = new Set<string>();
    const pooled = await connectPooled(seen);
    await until('two idle pooled runners', async () => (await idleCount()) === 2);

    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    const postedAt = Date.now();
    expect((await postMessage(hubCtx, sessionId, 'hello pool')).status).toBe(202);
    const claimed = await until('a claim', () => pooled.find((p) => p.claims.length > 0));
    // The refill waits: the coordinator's next wake-up is the claim plus REFILL_AFTER_CLAIM_MS,
    // not a launch beside the claimed runner's link and first answer (nor the 30 s recheck).
    const wake = await until('the refill after the claim scheduled', () =>
      runInDurableObject(poolCoordinator(env), (_c, state) => state.storage.getAlarm()).then((at) =>
        at !== null && at <= Date.now() + REFILL_AFTER_CLAIM_MS ? at : undefined,
      ),
    );
    expect(wake).toBeGreaterThanOrEqual(postedAt + REFILL_AFTER_CLAIM_MS);
    const claim = claimed.claims[0] as PoolClaim;
    expect(claim.sessionId).toBe(sessionId);
    expect(claim.hubUrl).toBe('ws://localhost/internal/runner/connect');
    // The first message rides with the claim: the prewarmed CLI can start on it while the runner dials.
    expect(claim.first).toEqual({ messageId: expect.any(String), message: { text: 'hello pool' } });
    expect((await until('the pool link closed', () => claimed.closed)).code).toBe(PoolCloseCode.claimed);
    // No cold launch for this session: the pooled runner is its runner.
    expect(ctx.launcher.startsFor(sessionId)).toEqual([]);

    // The pooled runner dials the hub with the claim's token, as a launched runner would.
    const runner = await dialHub(claimed, claim, sessionId);
    // The hub's own copy still follows the welcome (the runner answers it as a duplicate).
    const msg = await runner.waitFor('user_message');
    expect(msg.message.text).toBe('hello pool');
    expect(msg.messageId).toBe(claim.first?.messageId);
    // The session's launch is the pooled task (D1 mirrors the hub's launch ref).
    const row = await until('the runner ref in D1', () =>
      env.DB.prepare('SELECT runner_ref FROM sessions WHERE id = ?')
        .bind(sessionId)
        .first<{ runner_ref: string | null }>()
        .then((r) => (r?.runner_ref ? r.runner_ref : undefined)),
    );
    expect(row).toBe(`pool-task-${claimed.request.runnerId}`);

    // Refill: a third pooled launch replaces the claimed one.
    await until('the pool refills', () => ctx.launcher.pooled.length === 3);
    // Never reused: the claimed runner is gone from the pool, and its pool token opens nothing.
    const ids = (await poolCoordinator(env).status()).runners.map((r) => r.id);
    expect(ids).not.toContain(claimed.request.runnerId);
    const again = await FakePooledRunner.dial(ctx.app, claimed.request);
    expect((await until('refused', () => again.closed))?.code).toBe(PoolCloseCode.unauthorized);
    runner.close();
  });

  it('an interrupt while the claim carries the first message goes to the claimed runner: the turn ends once, interrupted', async () => {
    // The attack on the person's intent: the hub ended the turn itself (the message "never reached
    // a runner") while the claim was carrying it to a CLI that starts on it at once, so the
    // interrupted prompt ran anyway, its turn ended twice and the next message met a busy runner.
    const pooled = await oneIdlePooled();
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    const held = holdClaims();
    const posted = await postMessage(hubCtx, sessionId, 'rm -rf the thing');
    expect(posted.status).toBe(202);
    await held.entered;
    const interrupt = call(ctx.app, 'POST', `/api/sessions/${sessionId}/interrupt`, { token: ctx.user });
    held.release();
    expect((await interrupt).status).toBe(202);
    const claimed = pooled[0] as FakePooledRunner;
    const claim = (await until('the claim', () => claimed.claims[0])) as PoolClaim;
    expect(claim.first?.messageId).toBe(posted.body.messageId);
    expect(await turnDones(sessionId)).toEqual([]);
    // The claimed runner links: the hub's copy of the message, then the interrupt.
    const runner = await dialHub(claimed, claim, sessionId);
    await runner.waitFor('user_message');
    await runner.waitFor('interrupt');
    runner.events([{ type: 'turn.done', stopReason: 'interrupted' }], posted.body.messageId);
    await runner.waitAck(runner.seq);
    expect(await turnDones(sessionId)).toEqual([{ stopReason: 'interrupted', messageId: posted.body.messageId }]);
    runner.close();
  });

  it('an interrupt while a claim with the first message finds no pooled runner ends the turn at once; no runner gets it', async () => {
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    const held = holdClaims();
    const posted = await postMessage(hubCtx, sessionId, 'never mind');
    await held.entered;
    const interrupt = call(ctx.app, 'POST', `/api/sessions/${sessionId}/interrupt`, { token: ctx.user });
    held.release();
    expect((await interrupt).status).toBe(202);
    expect(await turnDones(sessionId)).toEqual([{ stopReason: 'interrupted', messageId: posted.body.messageId }]);
    const launch = await until('the cold launch', () => ctx.launcher.startsFor(sessionId)[0]);
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId });
    runner.hello(sessionId);
    await runner.waitFor('welcome');
    expect(runner.of('user_message')).toEqual([]);
    runner.close();
  });

  it('a first message too big for the claim frame comes after the welcome only', async () => {
    const pooled = await oneIdlePooled();
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    // Fewer characters than the limit, more bytes: the bound is on the frame's UTF-8 size.
    const text = 'é'.repeat(POOL_CLAIM_MAX_BYTES / 2);
    expect((await postMessage(hubCtx, sessionId, text)).status).toBe(202);
    const claimed = pooled[0] as FakePooledRunner;
    const claim = await until('the claim', () => claimed.claims[0]);
    expect(claim.sessionId).toBe(sessionId);
    expect(claim.first).toBeUndefined();
    const runner = await dialHub(claimed, claim, sessionId);
    expect((await runner.waitFor('user_message')).message.text).toBe(text);
    runner.close();
  });

  it('a runner started ahead of the first message is a pooled one, claimed with no message; the message follows the welcome', async () => {
    const pooled = await oneIdlePooled();
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    const started = await call(ctx.app, 'POST', `/api/sessions/${sessionId}/start`, { token: ctx.user });
    expect(started.status, started.text).toBe(202);
    const claimed = pooled[0] as FakePooledRunner;
    const claim = await until('the claim', () => claimed.claims[0]);
    expect(claim.sessionId).toBe(sessionId);
    expect(claim.first).toBeUndefined();
    expect(ctx.launcher.startsFor(sessionId)).toEqual([]);
    const runner = await dialHub(claimed, claim, sessionId);
    expect(runner.of('user_message')).toEqual([]);
    const sending = postMessage(hubCtx, sessionId, 'typed meanwhile');
    const msg = await runner.waitFor('user_message');
    expect(msg.message.text).toBe('typed meanwhile');
    runner.send({ type: 'accepted', inReplyTo: msg.messageId });
    expect((await sending).status).toBe(202);
    runner.close();
  });

  it('two concurrent first messages never share one pooled runner; the other launches cold', async () => {
    const pooled = await oneIdlePooled();

    const hubCtx = asUser();
    const a = await createSession(hubCtx, ctx.user);
    const b = await createSession(hubCtx, ctx.user);
    const [ra, rb] = await Promise.all([postMessage(hubCtx, a, 'a'), postMessage(hubCtx, b, 'b')]);
    expect([ra.status, rb.status]).toEqual([202, 202]);
    await until(
      'one cold launch',
      () => ctx.launcher.starts.filter((s) => s.sessionId === a || s.sessionId === b).length === 1,
    );
    const only = pooled[0] as FakePooledRunner;
    await until('the claim', () => only.claims.length === 1);
    const cold = ctx.launcher.starts.find((s) => s.sessionId === a || s.sessionId === b);
    // Exactly one claim frame, for the session that did not launch cold.
    expect(only.claims).toHaveLength(1);
    expect(only.claims[0]?.sessionId).not.toBe(cold?.sessionId);
  });

  it('a launch with something to restore takes a pooled runner too; its message follows the welcome, which brings what to restore', async () => {
    // Files put in before the first message, approval mode ask, a repository still to clone: each
    // session claims a pooled runner with no message in the claim (the runner replaces its CLI).
    await setPool({ claude: 3 });
    const pooled = await connectPooled(new Set());
    await until('three idle pooled runners', async () => (await idleCount()) === 3);
    const hubCtx = asUser();
    const create = async (body: Record<string, unknown>) => {
      const r = await call<{ id: string }>(ctx.app, 'POST', '/api/sessions', { token: ctx.user, body });
      expect(r.status, r.text).toBe(201);
      return r.body.id;
    };
    const files = await create({});
    const put = await ctx.app.request(
      `http://localhost/api/sessions/${files}/files/notes.txt`,
      { method: 'PUT', headers: { Authorization: `Bearer ${ctx.user}` }, body: 'read me first' },
      env,
    );
    expect(put.status).toBe(201);
    const ask = await create({ approvals: 'ask' });
    const repo = await create({ repository: { url: 'https://git.example.org/acme/widgets.git' } });
    const welcomes = [];
    for (const sessionId of [files, ask, repo]) {
      expect((await postMessage(hubCtx, sessionId, `hello ${sessionId}`)).status).toBe(202);
      const claimed = await until('the claim', () => pooled.find((p) => p.claims[0]?.sessionId === sessionId));
      const claim = claimed.claims[0] as PoolClaim;
      expect(claim.first).toBeUndefined();
      expect(ctx.launcher.startsFor(sessionId)).toEqual([]);
      const runner = await dialHub(claimed, claim, sessionId);
      welcomes.push(runner.of('welcome')[0]);
      expect((await runner.waitFor('user_message')).message.text).toBe(`hello ${sessionId}`);
      runner.close();
    }
    expect(welcomes.map((w) => w?.workspaceGeneration)).toEqual([1, 0, 0]);
    expect(welcomes.map((w) => w?.approvals ?? 'auto')).toEqual(['auto', 'ask', 'auto']);
    expect(welcomes.map((w) => w?.repository?.url)).toEqual([
      undefined,
      undefined,
      'https://git.example.org/acme/widgets.git',
    ]);
  });

  it('a stopped session takes a pooled runner for its next message; the welcome brings its transcript to resume', async () => {
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    // The first launch is cold (no pool yet); its runner stores a transcript and stops.
    const { runner: first } = await launchAndConnect(hubCtx, sessionId);
    await endWithTranscript(hubCtx, sessionId, first);
    first.close();

    const pooled = await oneIdlePooled();
    expect((await postMessage(hubCtx, sessionId, 'and again')).status).toBe(202);
    const claimed = pooled[0] as FakePooledRunner;
    const claim = await until('the claim', () => claimed.claims[0]);
    expect(claim.sessionId).toBe(sessionId);
    expect(claim.first).toBeUndefined();
    expect(ctx.launcher.startsFor(sessionId)).toHaveLength(1);
    // A pooled runner's hello may count frames already (an error its prewarmed CLI reported).
    const runner = await dialHub(claimed, claim, sessionId, 1);
    expect(runner.of('welcome')[0]?.transcript).toEqual(transcriptFixture());
    expect((await runner.waitFor('user_message')).message.text).toBe('and again');
    runner.close();
  });

  it('a claim straight at the coordinator is atomic: concurrent claims for one idle runner give it once', async () => {
    await setPool({ claude: 1 });
    await connectPooled(new Set());
    await until('one idle pooled runner', async () => (await idleCount()) === 1);
    const want = {
      backend: 'claude' as const,
      model: null,
      hubUrl: 'ws://localhost/internal/runner/connect',
      runnerToken: 't',
    };
    const results = await Promise.all(
      ['s1', 's2', 's3', 's4'].map((sessionId) => poolCoordinator(env).claim({ ...want, sessionId })),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });

  it('the backend switch drains the old backend and fills the new one', async () => {
    await setPool({ claude: 1, pi: 1 });
    expect(ctx.launcher.pooled.map((p) => p.backend)).toEqual(['claude']);
    const [claude] = await connectPooled(new Set());
    await until('one idle pooled runner', async () => (await idleCount()) === 1);

    const r = await call(ctx.app, 'PUT', '/api/admin/settings', { token: ctx.admin, body: { llmBackend: 'pi' } });
    expect(r.status, r.text).toBe(200);
    const closed = await until('the claude runner retired', () => claude?.closed);
    expect(closed).toEqual({ code: PoolCloseCode.retired, reason: 'drained' });
    await until('its task stopped', () =>
      ctx.launcher.stops.some((s) => s.ref === `pool-task-${claude?.request.runnerId}`),
    );
    await until('a pi runner launched', () => ctx.launcher.pooled.some((p) => p.backend === 'pi'));
  });

  it('a pooled runner older than the limit is replaced once its replacement is idle', async () => {
    await setPool({ claude: 1 });
    const seen = new Set<string>();
    const [first] = await connectPooled(seen);
    await until('one idle pooled runner', async () => (await idleCount()) === 1);
    ctx.clock.advance(poolMaxAgeMs(env));
    await poolCoordinator(env).poke(null);
    // A replacement is launched; the aged runner keeps its slot until the replacement is up.
    expect(ctx.launcher.pooled).toHaveLength(2);
    expect(first?.closed).toBeUndefined();
    await connectPooled(seen);
    await until('two idle pooled runners', async () => (await idleCount()) === 2);
    await poolCoordinator(env).poke(null);
    expect(await until('retired', () => first?.closed)).toEqual({ code: PoolCloseCode.retired, reason: 'aged' });
    expect(ctx.launcher.pooled).toHaveLength(2);
  });

  it('runner identity: a pool link whose proof is refused gets no socket and costs the pooled runner nothing; the one claimed needs no second proof at the hub', async () => {
    await setPool({ claude: 1 });
    const pooledRequest = ctx.launcher.pooled[0] as PoolLaunchRequest;
    const ref = `pool-task-${pooledRequest.runnerId}`;
    const refusal = 'the identity proof is not of the task this launch started';
    const proof = { amzDate: '20261207T040000Z', authorization: 'AWS4-HMAC-SHA256 pooled' };
    // Only the pooled task's own proof passes.
    ctx.launcher.verdict = (_runnerId, given) =>
      given?.authorization === proof.authorization
        ? { ok: true }
        : { ok: false, error: { code: 'runner_identity_refused', message: refusal, retryable: false } };
    // Someone who read the RunTask overrides dials with the pool token before the runner does,
    // with no proof and then with another task's, and holds on.
    const thieves = [
      await FakePooledRunner.dial(ctx.app, pooledRequest),
      await FakePooledRunner.dial(ctx.app, pooledRequest, pooledRequest.poolToken, {
        amzDate: '20261207T040000Z',
        authorization: 'AWS4-HMAC-SHA256 another task',
      }),
    ];
    for (const thief of thieves) {
      expect(await until('refused', () => thief.closed)).toEqual({ code: PoolCloseCode.unauthorized, reason: refusal });
    }
    expect(ctx.launcher.verifications).toEqual([
      { ref, runnerId: pooledRequest.runnerId, proof: undefined },
      {
        ref,
        runnerId: pooledRequest.runnerId,
        proof: expect.objectContaining({ authorization: 'AWS4-HMAC-SHA256 another task' }),
      },
    ]);
    // The slot is neither taken nor lost: the real runner links, proves itself and is claimed.
    const pooled = await FakePooledRunner.dial(ctx.app, pooledRequest, pooledRequest.poolToken, proof);
    pooled.hello();
    await until('one idle pooled runner', async () => (await idleCount()) === 1);
    expect(ctx.launcher.pooled).toHaveLength(1);
    expect(ctx.launcher.stops).toEqual([]);
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    await postMessage(hubCtx, sessionId, 'hello pool');
    const claim = (await until('a claim', () => pooled.claims[0])) as PoolClaim;
    const runner = await FakeRunner.connect(ctx.app, {
      token: claim.runnerToken,
      sessionId,
      runnerId: pooledRequest.runnerId,
    });
    // Refused from now on: were the hub to ask, the claimed runner would be turned away.
    ctx.launcher.verdict = () => ({
      ok: false,
      error: { code: 'runner_identity_refused', message: refusal, retryable: false },
    });
    runner.hello(sessionId);
    await runner.waitFor('welcome');
    // Its link was checked against its pooled task; the claim's token went to it alone, over that
    // link, so the hub does not ask again (no STS round trip before a pooled first answer).
    expect(ctx.launcher.verifications.slice(2)).toEqual([{ ref, runnerId: pooledRequest.runnerId, proof }]);
    runner.close();
  });

  it('a claim’s token admits only the claimed runner’s id at the hub', async () => {
    const [pooled] = await oneIdlePooled();
    if (pooled === undefined) throw new Error('no pooled runner');
    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    await postMessage(hubCtx, sessionId, 'hello pool');
    const claim = (await until('a claim', () => pooled.claims[0])) as PoolClaim;
    // Whoever got hold of the claim's token says hello first, under another runner id.
    const other = await FakeRunner.connect(ctx.app, {
      token: claim.runnerToken,
      sessionId,
      runnerId: 'not-the-pooled-one',
    });
    other.hello(sessionId);
    expect(await other.waitClosed()).toMatchObject({
      code: RunnerCloseCode.unauthorized,
      reason: 'the launch token is bound to another runner',
    });
    expect(other.of('welcome')).toEqual([]);
    const runner = await dialHub(pooled, claim, sessionId);
    expect(runner.of('welcome')).toHaveLength(1);
    runner.close();
  });

  it('a pool link whose proof could not be checked just now (STS unreachable) is told to try again; the next dial is accepted', async () => {
    await setPool({ claude: 1 });
    const pooledRequest = ctx.launcher.pooled[0] as PoolLaunchRequest;
    const proof = { amzDate: '20261207T040000Z', authorization: 'AWS4-HMAC-SHA256 pooled' };
    const unreachable = 'could not reach STS to check the runner identity';
    ctx.launcher.verdict = () => ({
      ok: false,
      error: { code: 'runner_identity_unavailable', message: unreachable, retryable: true },
    });
    const first = await FakePooledRunner.dial(ctx.app, pooledRequest, pooledRequest.poolToken, proof);
    expect(await until('closed', () => first.closed)).toEqual({
      code: PoolCloseCode.tryAgainLater,
      reason: unreachable,
    });
    ctx.launcher.verdict = () => ({ ok: true });
    const again = await FakePooledRunner.dial(ctx.app, pooledRequest, pooledRequest.poolToken, proof);
    again.hello();
    await until('one idle pooled runner', async () => (await idleCount()) === 1);
    expect(ctx.launcher.pooled).toHaveLength(1);
    expect(ctx.launcher.stops).toEqual([]);
  });

  it('refuses a pool link with a session runner token, a bad token, or a second link', async () => {
    await setPool({ claude: 1 });
    const req = ctx.launcher.pooled[0] as PoolLaunchRequest;
    const bad = await FakePooledRunner.dial(ctx.app, req, 'syr1.x.y');
    expect((await until('refused', () => bad.closed))?.code).toBe(PoolCloseCode.unauthorized);
    const first = await FakePooledRunner.dial(ctx.app, req);
    first.ws.send(RUNNER_LINK_PING);
    const second = await FakePooledRunner.dial(ctx.app, req);
    expect((await until('second refused', () => second.closed))?.code).toBe(PoolCloseCode.unauthorized);
    // The pool token does not open a session hub.
    const hub = await FakeRunner.connect(ctx.app, { token: req.poolToken, runnerId: req.runnerId });
    hub.send({
      type: 'hello',
      protocol: WIRE_PROTOCOL_VERSION,
      runnerId: req.runnerId,
      sessionId: '~pool',
      backend: 'claude',
      cliVersion: 'x',
      capabilities: { guard: 'loaded', sandbox: 'none' },
      lastSeq: 0,
    });
    expect((await hub.waitClosed()).code).toBeGreaterThanOrEqual(4400);
    first.ws.close(1000, 'done');
  });
});

describe('warm runner pool: a restart and a failed look', () => {
  /** Restarts the coordinator as a deploy or crash does: its sockets go, no webSocketClose. */
  async function restartCoordinator(): Promise<void> {
    await runInDurableObject(poolCoordinator(env), (_c, state) => state.abort('simulated restart')).catch(
      () => undefined, // abort() makes the call itself fail: that is the restart
    );
  }

  it('after a restart an idle runner whose link went with it is dropped, its task stopped and replaced; the replacement is claimed', async () => {
    const seen = new Set<string>();
    await setPool({ claude: 1 });
    const [lost] = await connectPooled(seen);
    if (lost === undefined) throw new Error('no pooled runner');
    // Stored as idle, as it is long after its hello when the deploy comes.
    await until('the idle record stored', () =>
      runInDurableObject(poolCoordinator(env), (_c, state) => state.storage.get<PooledRunner[]>('runners')).then(
        (rs) => rs?.length === 1 && rs[0]?.state === 'idle',
      ),
    );
    await restartCoordinator();
    // The runner saw its link drop (it exits: any close before a claim but 1013 ends it).
    await until('the pool link dropped', () => lost.closed);

    // The object's start already finds the link gone: the first call after it sees no such runner.
    const lostId = lost.request.runnerId;
    expect((await poolCoordinator(env).status()).runners.map((r) => r.id)).not.toContain(lostId);
    await until('its task stopped', () =>
      ctx.launcher.stops.some((s) => s.ref === `pool-task-${lostId}` && s.reason === 'pooled runner lost its link'),
    );
    // The start set the alarm for now: the replacement comes without waiting for the 30 s recheck.
    await until('a replacement launched', () => ctx.launcher.pooled.length === 2);
    const [replacement] = await connectPooled(seen);
    await until('the replacement idle', async () => (await idleCount()) === 1);
    // A poke now plans the same slot: still one replacement.
    await poolCoordinator(env).poke(null);
    expect(ctx.launcher.pooled).toHaveLength(2);

    const hubCtx = asUser();
    const sessionId = await createSession(hubCtx, ctx.user);
    expect((await postMessage(hubCtx, sessionId, 'after the deploy')).status).toBe(202);
    const claim = await until('the replacement claimed', () => replacement?.claims[0]);
    expect(claim.sessionId).toBe(sessionId);
    expect(ctx.launcher.startsFor(sessionId)).toEqual([]);
  });

  it('a claim passes over an idle runner whose link is gone to the next one, and stops its task', async () => {
    const seen = new Set<string>();
    await setPool({ claude: 1 });
    const [older] = await connectPooled(seen);
    await until('one idle pooled runner', async () => (await idleCount()) === 1);
    ctx.clock.advance(1_000);
    await setPool({ claude: 2 });
    const [younger] = await connectPooled(seen);
    await until('two idle pooled runners', async () => (await idleCount()) === 2);
    if (older === undefined || younger === undefined) throw new Error('no pooled runners');
    const olderId = older.request.runnerId;
    const want = {
      backend: 'claude' as const,
      model: null,
      sessionId: 's-gone',
      hubUrl: 'ws://localhost/internal/runner/connect',
      runnerToken: 't',
    };
    // The oldest is picked first; its link goes in the same event as the claim, before any
    // webSocketClose could forget it.
    const result = await runInDurableObject(poolCoordinator(env), (coordinator, state) => {
      for (const ws of state.getWebSockets(olderId)) ws.close(1001, 'gone');
      return coordinator.claim(want);
    });
    expect(result?.runnerId).toBe(younger.request.runnerId);
    expect(older.claims).toEqual([]);
    await until('the older one’s task stopped', () => ctx.launcher.stops.some((s) => s.ref === `pool-task-${olderId}`));
    expect((await poolCoordinator(env).status()).runners.map((r) => r.id)).not.toContain(olderId);
  });

  it('a launching runner (no link yet) is not taken for lost after a restart', async () => {
    await setPool({ claude: 1 });
    await restartCoordinator();
    await poolCoordinator(env).poke(null);
    const status = await poolCoordinator(env).status();
    expect(status.runners.map((r) => [r.id, r.state])).toEqual([[ctx.launcher.pooled[0]?.runnerId, 'launching']]);
    expect(ctx.launcher.pooled).toHaveLength(1);
    expect(ctx.launcher.stops).toEqual([]);
  });

  it('an alarm whose settings read fails is still followed by an alarm, not at once; the next one does the work', async () => {
    await setPool({ claude: 1 });
    const stub = poolCoordinator(env);
    expect(await runInDurableObject(stub, (_c, state) => state.storage.getAlarm())).not.toBeNull();
    // The launch never said hello: its connect deadline is past, work the failed alarm leaves undone.
    ctx.clock.advance(timingsFromEnv(env).connectTimeoutMs);
    // D1 fails the coordinator's next read once (its settings: the alarm's first step).
    await runInDurableObject(stub, (coordinator) => {
      // `env` is protected on the Durable Object; the test reaches into it to break D1 once.
      const db = (coordinator as unknown as { env: Env }).env.DB as D1Database & { prepare: D1Database['prepare'] };
      db.prepare = () => {
        delete (db as Partial<D1Database>).prepare; // once: the prototype's comes back
        throw new Error('D1_ERROR: simulated outage');
      };
    });
    const before = Date.now();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const at = await runInDurableObject(stub, (_c, state) => state.storage.getAlarm());
    // Re-armed: not at once into the same failure (the deadline is past), no later than the recheck.
    expect(at).not.toBeNull();
    expect(at).toBeGreaterThanOrEqual(before + 5_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 30_000);
    expect(ctx.launcher.pooled).toHaveLength(1);
    // The next alarm does the work: the launch that never connected is replaced.
    const first = ctx.launcher.pooled[0]?.runnerId;
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(ctx.launcher.pooled).toHaveLength(2);
    await until('the silent launch stopped', () =>
      ctx.launcher.stops.some(
        (s) => s.ref === `pool-task-${first}` && s.reason === 'pooled runner retired: never_connected',
      ),
    );
  });
});
