import { env } from 'cloudflare:workers';
import {
  HubToRunnerSchema,
  RunnerToHubSchema,
  WIRE_PROTOCOL_VERSION,
  type AgentEvent,
  type HubToRunner,
  type RunnerIdentityProof,
  type RunnerToHub,
  type Transcript,
} from '@switchyard/protocol';
import type { z } from 'zod';
import type { LaunchRequest, Launcher, RunnerDescription } from '../src/launchers/launcher.ts';
import type { IdentityVerdict } from '../src/launchers/task-identity.ts';
import { setHubRuntimeForTests, timingsFromEnv, type HubTimings } from '../src/hub/runtime.ts';
import type {
  AdminSessionPageSchema,
  MessageAcceptedSchema,
  Session,
  SessionDetailSchema,
  SessionPageSchema,
  SessionTranscriptSchema,
} from '../src/sessions/schemas.ts';
import { until } from '../../test/helpers/poll.ts';
import { type SseEvent, SseReader as SharedSseReader } from '../../test/helpers/sse.ts';
import {
  adminWithToken,
  call,
  type CallResult,
  type ErrorResponse,
  type FakeClock,
  makeApp,
  userWithToken,
  type TestApp,
} from './helpers.ts';

// Helpers for the session hub tests: a fake Launcher that records calls, a fake runner that
// speaks the wire schemas over a real WebSocket through the Worker, and the session's events
// through the shared SSE reader. Nothing here sleeps to synchronize: `until` (the shared poll
// helper) polls a condition against a deadline.

// Bodies the hub tests read, from the routes' own schemas.
export type SessionDetail = z.infer<typeof SessionDetailSchema>;
export type MessageAccepted = z.infer<typeof MessageAcceptedSchema>;
export type SessionPage = z.infer<typeof SessionPageSchema>;
export type AdminSessionPage = z.infer<typeof AdminSessionPageSchema>;
export type SessionTranscript = z.infer<typeof SessionTranscriptSchema>;

let launchers = 0;

export class FakeLauncher implements Launcher {
  /**
   * Refs are unique across launchers: every test's hub reaches the launcher of the newest
   * context (the hub runtime is global), so a stop from an earlier test's hub, whose alarm
   * can still fire, must not pass for one of this test's runners.
   */
  private readonly prefix = `fake-${++launchers}`;
  starts: LaunchRequest[] = [];
  stops: Array<{ ref: string; reason: string }> = [];
  describes: string[] = [];
  states = new Map<string, RunnerDescription>();
  failStart: string | undefined;
  /** When set, every start waits for it before it answers (a launcher still starting the task). */
  holdStart: Promise<void> | undefined;
  /** Every identity check the hub asked for, in order. */
  verifications: Array<{ ref: string; runnerId: string; proof: RunnerIdentityProof | undefined }> = [];
  /** The answer to identity checks (default: every runner is who it says). */
  verdict: (runnerId: string, proof: RunnerIdentityProof | undefined) => IdentityVerdict = () => ({ ok: true });
  private n = 0;

  /** Holds every start until the returned release is called (a launcher still starting the task). */
  holdStarts(): () => void {
    let release = () => {};
    this.holdStart = new Promise<void>((r) => {
      release = r;
    });
    return release;
  }

  async start(request: LaunchRequest): Promise<string> {
    this.starts.push(request);
    await this.holdStart;
    if (this.failStart !== undefined) throw new Error(this.failStart);
    this.n += 1;
    const ref = this.ref(this.n);
    this.states.set(ref, { state: 'running' });
    return ref;
  }
  async stop(ref: string, reason: string): Promise<void> {
    // A runner this launcher never started: an earlier test's hub stopping its own.
    if (!this.states.has(ref)) return;
    this.stops.push({ ref, reason });
    this.states.set(ref, { state: 'stopped', exitCode: 0, reason: 'stopped by the hub' });
  }
  async describe(ref: string): Promise<RunnerDescription> {
    this.describes.push(ref);
    return this.states.get(ref) ?? { state: 'unknown' };
  }
  async verifyRunner(ref: string, runnerId: string, proof: RunnerIdentityProof | undefined): Promise<IdentityVerdict> {
    this.verifications.push({ ref, runnerId, proof });
    return this.verdict(runnerId, proof);
  }
  /** The ref of the nth runner this launcher started (1-based). */
  ref(n: number): string {
    return `${this.prefix}-task-${n}`;
  }
  startsFor(sessionId: string): LaunchRequest[] {
    return this.starts.filter((s) => s.sessionId === sessionId);
  }
}

export interface HubTestContext {
  app: TestApp;
  clock: FakeClock;
  launcher: FakeLauncher;
  token: string;
  user: { id: string; username: string };
}

/** An app, a user, a fake launcher and a fake clock shared by the Worker and the hub. */
export async function hubContext(timings: Partial<HubTimings> = {}): Promise<HubTestContext> {
  const { app, clock } = makeApp();
  const launcher = new FakeLauncher();
  setHubRuntimeForTests({
    clock: clock.now,
    launcherFor: () => launcher,
    timings: (e) => ({ ...timingsFromEnv(e), replyTimeoutMs: 3_000, ...timings }),
  });
  const { user, token } = await userWithToken(clock);
  return { app, clock, launcher, token, user };
}

/** Changes settings as a fresh admin, who is returned for tests that go on acting as one. */
export async function setSettings(ctx: HubTestContext, patch: Record<string, unknown>) {
  const admin = await adminWithToken(ctx.clock);
  const r = await call(ctx.app, 'PUT', '/api/admin/settings', { token: admin.token, body: patch });
  if (r.status !== 200) throw new Error(`settings ${JSON.stringify(patch)}: ${r.status} ${r.text}`);
  return admin;
}

export async function createSession(ctx: HubTestContext, token = ctx.token): Promise<string> {
  const r = await call<Session>(ctx.app, 'POST', '/api/sessions', { token, body: { title: 'test' } });
  if (r.status !== 201) throw new Error(`create session: ${r.status} ${r.text}`);
  return r.body.id;
}

/** `B`: the body the test expects; the 202 by default, `ErrorResponse` for a refusal. */
export async function postMessage<B = MessageAccepted>(
  ctx: HubTestContext,
  sessionId: string,
  text: string,
  extra: Record<string, unknown> = {},
  token = ctx.token,
): Promise<CallResult<B>> {
  return call<B>(ctx.app, 'POST', `/api/sessions/${sessionId}/messages`, { token, body: { text, ...extra } });
}

export function hubStub(sessionId: string) {
  return env.SESSION_HUB.get(env.SESSION_HUB.idFromName(sessionId));
}

// ------------------------------------------------------------------ fake runner

export class FakeRunner {
  received: HubToRunner[] = [];
  invalid: string[] = [];
  closed: { code: number; reason: string } | undefined;
  seq = 0;
  readonly ws: WebSocket;
  readonly runnerId: string;
  constructor(ws: WebSocket, runnerId: string) {
    this.ws = ws;
    this.runnerId = runnerId;
    ws.addEventListener('message', (e) => {
      const text = typeof e.data === 'string' ? e.data : '';
      if (text === '{"type":"pong"}') {
        this.received.push({ type: 'pong' });
        return;
      }
      const parsed = HubToRunnerSchema.safeParse(JSON.parse(text));
      if (parsed.success) this.received.push(parsed.data);
      else this.invalid.push(text);
    });
    ws.addEventListener('close', (e) => {
      this.closed = { code: e.code, reason: e.reason };
    });
  }

  static async connect(
    app: TestApp,
    opts: { token: string; sessionId?: string; runnerId?: string; envOverride?: Partial<Env> },
  ): Promise<FakeRunner> {
    const q = opts.sessionId === undefined ? '' : `?session=${opts.sessionId}`;
    const res = await app.request(
      `http://localhost/internal/runner/connect${q}`,
      { headers: { Upgrade: 'websocket', Authorization: `Bearer ${opts.token}` } },
      { ...env, ...opts.envOverride },
    );
    const ws = res.webSocket;
    if (ws === null) throw new Error(`runner connect: HTTP ${res.status} ${await res.text()}`);
    ws.accept();
    return new FakeRunner(ws, opts.runnerId ?? `runner-${crypto.randomUUID()}`);
  }

  send(msg: RunnerToHub): void {
    this.ws.send(JSON.stringify(RunnerToHubSchema.parse(msg)));
  }
  sendRaw(text: string): void {
    this.ws.send(text);
  }

  hello(
    sessionId: string,
    opts: {
      backend?: 'claude' | 'pi';
      lastSeq?: number;
      cli?: 'starting' | 'running' | 'stopped';
      identity?: RunnerIdentityProof;
    } = {},
  ): void {
    this.send({
      type: 'hello',
      protocol: WIRE_PROTOCOL_VERSION,
      runnerId: this.runnerId,
      sessionId,
      backend: opts.backend ?? 'claude',
      cliVersion: 'fake 1.0',
      capabilities: { guard: 'loaded', sandbox: 'none' },
      lastSeq: opts.lastSeq ?? this.seq,
      ...(opts.cli !== undefined && { cli: opts.cli }),
      ...(opts.identity !== undefined && { identity: opts.identity }),
    });
  }

  /** Sends events as one sequenced frame; returns the seqs used. */
  events(events: AgentEvent[], messageId?: string): number[] {
    const seqs: number[] = [];
    const frame = events.map((event) => {
      this.seq += 1;
      seqs.push(this.seq);
      return { seq: this.seq, event, ...(messageId !== undefined && { messageId }) };
    });
    this.send({ type: 'events', events: frame });
    return seqs;
  }

  of<T extends HubToRunner['type']>(type: T): Array<Extract<HubToRunner, { type: T }>> {
    return this.received.filter((m): m is Extract<HubToRunner, { type: T }> => m.type === type);
  }

  async waitFor<T extends HubToRunner['type']>(
    type: T,
    pred: (m: Extract<HubToRunner, { type: T }>) => boolean = () => true,
    what = type,
  ): Promise<Extract<HubToRunner, { type: T }>> {
    return until(`runner to receive ${what}`, () => this.of(type).find(pred));
  }

  async waitAck(seq: number): Promise<void> {
    await until(`ack of seq ${seq}`, () => this.of('ack').some((a) => a.seq >= seq));
  }

  async waitClosed(): Promise<{ code: number; reason: string }> {
    return until('the runner link to close', () => this.closed);
  }

  close(): void {
    try {
      this.ws.close(1000, 'test');
    } catch {
      // closed
    }
  }
}

/** What a runner stores after a turn: a claude conversation of one gzipped line. */
export function transcriptFixture(resumeId = 'abc.jsonl'): Transcript {
  return {
    backend: 'claude',
    resumeId,
    encoding: 'gzip+base64',
    data: 'H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA==',
    sha256: 'a'.repeat(64),
    bytes: 5,
  };
}

/**
 * The runner answers the turn, stores `transcript` and stops as an idle runner does; resolves once
 * the session is at rest (its next message launches a new runner, which resumes).
 */
export async function endWithTranscript(
  ctx: HubTestContext,
  sessionId: string,
  runner: FakeRunner,
  transcript: Transcript = transcriptFixture(),
): Promise<void> {
  const um = await runner.waitFor('user_message');
  runner.send({ type: 'accepted', inReplyTo: um.messageId });
  runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
  runner.seq += 1;
  runner.send({ type: 'transcript', seq: runner.seq, transcript });
  await runner.waitAck(runner.seq);
  runner.send({ type: 'bye', reason: 'idle', lastSeq: runner.seq });
  await until('the session at rest', async () => {
    const r = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sessionId}`, { token: ctx.token });
    return r.body.state === 'stopped';
  });
}

/** Launch (by posting a message) and connect a fake runner that says hello and gets welcome. */
export async function launchAndConnect(
  ctx: HubTestContext,
  sessionId: string,
  text = 'hello',
): Promise<{ runner: FakeRunner; messageId: string; launch: LaunchRequest }> {
  const r = await postMessage(ctx, sessionId, text);
  if (r.status !== 202) throw new Error(`post message: ${r.status} ${r.text}`);
  return { ...(await connectLaunched(ctx, sessionId)), messageId: r.body.messageId };
}

/** The session's latest launch, its runner dialled in with the launch's token and welcomed. */
export async function connectLaunched(
  ctx: HubTestContext,
  sessionId: string,
): Promise<{ runner: FakeRunner; launch: LaunchRequest }> {
  const launch = await until('a launch', () => ctx.launcher.startsFor(sessionId).at(-1));
  const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId });
  runner.hello(sessionId);
  await runner.waitFor('welcome');
  return { runner, launch };
}

// ------------------------------------------------------------------ SSE reader

/** A session's event stream through the Worker: the shared reader plus the response. */
export class SseReader extends SharedSseReader {
  readonly response: Response;
  constructor(response: Response) {
    if (response.body === null) throw new Error('no body');
    super(response.body);
    this.response = response;
  }

  static async open(
    ctx: HubTestContext,
    sessionId: string,
    opts: { after?: string; lastEventId?: string; token?: string; envOverride?: Partial<Env> } = {},
  ): Promise<SseReader> {
    const headers: Record<string, string> = { Authorization: `Bearer ${opts.token ?? ctx.token}` };
    if (opts.lastEventId !== undefined) headers['Last-Event-ID'] = opts.lastEventId;
    const q = opts.after === undefined ? '' : `?after=${opts.after}`;
    const res = await ctx.app.request(
      `http://localhost/api/sessions/${sessionId}/events${q}`,
      { headers },
      { ...env, ...opts.envOverride },
    );
    if (res.status !== 200) throw new Error(`events: ${res.status} ${await res.text()}`);
    return new SseReader(res);
  }
}

export function statusStates(events: SseEvent[]): string[] {
  return events.filter((e) => e.event === 'session.status').map((e) => (e.data as { state: string }).state);
}

export { call, type ErrorResponse, type SseEvent, until };
