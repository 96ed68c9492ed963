import { DurableObject } from 'cloudflare:workers';
import {
  HubToRunnerSchema,
  RUNNER_LINK_PING,
  RUNNER_LINK_PONG,
  RunnerCloseCode,
  RunnerToHubSchema,
  type AgentEvent,
  type ErrorInfo,
  type HubToRunner,
  type RunnerToHub,
  type Transcript,
  type UserMessage,
} from '@switchyard/protocol';
import type { Launcher } from '../launchers/launcher.ts';
import { mintRunnerToken, MIN_SECRET_LENGTH } from './runner-token.ts';
import { claimRunnerSlot, releaseRunnerSlotStatement } from './runner-slots.ts';
import { hubRuntime, type HubTimings } from './runtime.ts';
import type {
  HubResult,
  HubSessionInfo,
  HubSnapshot,
  PostMessageInput,
  PostMessageResult,
  TranscriptEntry,
} from './types.ts';
import { EventLog, type LogItem } from './event-log.ts';
import { deleteTranscript, putTranscript, readTranscript } from './transcript-store.ts';
import { nextUlid } from './ulid.ts';
import {
  byeOutcome,
  checkSeq,
  decideTick,
  deriveState,
  endsTurnWithLaunch,
  exitedReason,
  freshMeta,
  needsRelaunch,
  newLaunch,
  newTurn,
  nextDeadline,
  statusChange,
  type LaunchRecord,
  type Meta,
  type TurnRecord,
} from './lifecycle.ts';
import {
  toViewerFrames,
  VIEWER_CLOSE_REPLAY_PAGE,
  VIEWER_CLOSE_SESSION_GONE,
  type StoredEvent,
} from './viewer-frames.ts';

// One SessionHub per session (DESIGN.md "Data path"; decisions in "Session hub decisions").
//
// - The event log lives in this object's SQLite; every event gets a strictly increasing ULID
//   and is written before it is sent anywhere.
// - Viewers are hibernatable WebSockets tagged `viewer`, each held by the Worker invocation
//   that serves one SSE response; the hub replays what a viewer missed, then broadcasts.
// - The runner is a hibernatable WebSocket tagged `runner`, speaking protocol/src/wire.ts.
// - Lifecycle state lives in one JSON row (`meta`), so the object can be evicted at any time;
//   the state a client sees is derived from it (`deriveState`) and every change is logged as
//   a `session.status` event and mirrored into D1 `sessions`.

type Reply = { accepted: true; duplicate?: boolean } | { accepted: false; error: ErrorInfo };

interface RunnerAttachment {
  kind: 'runner';
  launchId: string;
  runnerId: string | null;
  /** What the link was opened with; a credential names the only runner id it may say hello as. */
  auth?: { kind: 'bootstrap' } | { kind: 'credential'; runnerId: string };
}

const OPEN = 1;
const utf8 = new TextEncoder();
/** Only the hub says what state a session is in and what the user sent. */
const HUB_ONLY_EVENTS = new Set<string>(['session.status', 'message.user']);
const LOG_FULL_MESSAGE = (max: number) =>
  `this session's event log reached its limit (${Math.round(max / 1024 / 1024)} MiB); start a new session to continue`;
const BOOTSTRAP_SPENT = 'the launch token was already exchanged; reconnect with the credential from welcome';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason.slice(0, 120));
  } catch {
    // already closed
  }
}

export class SessionHub extends DurableObject<Env> {
  private meta: Meta;
  private readonly log: EventLog;
  private readonly waiters = new Map<string, (reply: Reply) => void>();
  private linkChain: Promise<void> = Promise.resolve();
  private d1Chain: Promise<void> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.log = new EventLog(ctx.storage);
    this.meta = this.log.loadMeta();
    // Runner heartbeats are answered without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(RUNNER_LINK_PING, RUNNER_LINK_PONG));
  }

  // ------------------------------------------------------------------ storage

  private saveMeta(): void {
    this.log.saveMeta(this.meta);
  }

  private get now(): number {
    return hubRuntime().clock();
  }

  private get timings(): HubTimings {
    return hubRuntime().timings(this.env);
  }

  private launcher(): Launcher {
    return hubRuntime().launcherFor(this.env);
  }

  /** Appends events to the log (one transaction with `also`), returning what was stored. */
  private append(items: LogItem[], also?: () => void): StoredEvent[] {
    try {
      return this.log.append(this.meta, items, this.now, also);
    } catch (err) {
      // Rolled back on disk; forget what the failed transaction changed in memory too.
      this.meta = this.log.loadMeta();
      throw err;
    }
  }

  private broadcast(events: StoredEvent[]): void {
    if (events.length === 0) return;
    const frames = toViewerFrames(events);
    for (const ws of this.ctx.getWebSockets('viewer')) {
      for (const frame of frames) {
        try {
          ws.send(frame);
        } catch {
          // a viewer that went away; its Worker ends the SSE stream
        }
      }
    }
  }

  /** Logs hub-made events, then broadcasts them. */
  private emit(event: AgentEvent, messageId?: string): void {
    this.broadcast(this.append([{ event, messageId }]));
  }

  // ------------------------------------------------------------------ state

  /**
   * Persists meta; if the derived state changed, logs and broadcasts `session.status` and
   * mirrors it into D1. Always re-arms the alarm.
   */
  private commit(): void {
    const change = statusChange(this.meta);
    if (change !== null) {
      this.meta.shown = change.shown;
      this.emit(change.event);
      this.syncD1();
    } else {
      this.saveMeta();
    }
    this.arm();
  }

  /** Mirrors state into D1, serialized and coalesced (a later write always carries the latest). */
  private syncD1(): void {
    const session = this.meta.session;
    if (session === null) return;
    this.d1Chain = this.d1Chain
      .then(async () => {
        if (this.meta.session === null) return;
        const { state, reason } = deriveState(this.meta);
        const launch = this.meta.launch;
        const update = this.env.DB.prepare(
          'UPDATE sessions SET state = ?, state_reason = ?, runner_ref = ?, updated_at = ?, stopped_at = ? WHERE id = ?',
        ).bind(state, reason, launch?.ref ?? null, this.now, launch === null ? this.now : null, session.id);
        // No launch: the runner slot goes back (read at write time, so a relaunch keeps it).
        await this.env.DB.batch(launch === null ? [update, releaseRunnerSlotStatement(this.env.DB, session.id)] : [update]);
      })
      .catch((err) => console.error('session hub: D1 state mirror failed:', errorText(err)));
  }

  private arm(): void {
    const deadline = nextDeadline(this.meta, this.timings);
    // Deadlines are in the hub clock's time; the alarm is set by the wall clock, so an
    // injected clock in tests never makes the alarm fire in a loop.
    const p =
      deadline === null
        ? this.ctx.storage.deleteAlarm()
        : this.ctx.storage.setAlarm(Date.now() + Math.max(0, deadline - this.now));
    p.catch((err) => console.error('session hub: alarm update failed:', errorText(err)));
  }

  // ------------------------------------------------------------------ RPC from the Worker

  async create(session: HubSessionInfo): Promise<HubSnapshot> {
    if (this.meta.session === null) {
      this.meta.session = session;
      this.meta.lastActivityAt = this.now;
      this.meta.shown = deriveState(this.meta);
      this.saveMeta();
    }
    return this.snapshotNow();
  }

  async snapshot(): Promise<HubResult<HubSnapshot>> {
    if (this.meta.session === null) return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return { ok: true, value: this.snapshotNow() };
  }

  private snapshotNow(): HubSnapshot {
    const { state, reason } = deriveState(this.meta);
    const l = this.meta.launch;
    return {
      state,
      stateReason: reason,
      turn: this.meta.turn === null ? null : { messageId: this.meta.turn.messageId },
      runner:
        l === null
          ? null
          : { launchId: l.id, ref: l.ref, runnerId: l.runnerId, connected: l.connected, startedAt: l.startedAt },
      lastEventId: this.meta.lastEventId,
    };
  }

  async postMessage(input: PostMessageInput): Promise<HubResult<PostMessageResult>> {
    if (this.meta.session === null) return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    if (input.clientMessageId !== undefined) {
      const seen = this.log.messageIdForClientId(input.clientMessageId);
      if (seen !== null) return { ok: true, value: { messageId: seen, duplicate: true } };
    }
    if (this.meta.turn !== null) {
      return { ok: false, status: 409, code: 'conflict', message: 'a turn is running; wait for turn.done or interrupt it' };
    }
    if (this.meta.logFull === true) {
      return { ok: false, status: 409, code: 'session_log_full', message: LOG_FULL_MESSAGE(this.timings.logMaxBytes) };
    }
    const now = this.now;
    const messageId = nextUlid(now, null);
    const message: UserMessage = { text: input.text, ...(input.images !== undefined && { images: input.images }) };
    this.log.addMessage(messageId, input.clientMessageId ?? null, message, now);
    this.meta.turn = newTurn(messageId);
    this.meta.limits = input.limits;
    this.meta.model = input.model;
    this.meta.hubUrl = input.hubUrl;
    this.meta.lastActivityAt = now;

    if (this.meta.launch === null) {
      // This message starts a runner: it needs a slot under the caps. meta.turn is already set,
      // so a concurrent message to this session is a 409 while the claim is in flight.
      const refused = await this.claimSlot(input, messageId);
      if (refused !== null) return refused;
    }

    const ws = this.meta.launch?.stoppingSince == null ? this.liveRunner() : undefined;
    if (ws === undefined) {
      // No runner to ask: the hub accepts the message now and delivers it when one says hello
      // (a runner that is stopping is left to finish; the next one gets the message).
      this.announce(this.meta.turn, message);
      if (this.meta.launch === null) this.startLaunch();
      else this.commit();
      return { ok: true, value: { messageId, duplicate: false } };
    }

    this.saveMeta();
    this.meta.turn.sent = true;
    const reply = this.request(ws, { type: 'user_message', messageId, message });
    const answer = await reply;
    if (answer === 'timeout') {
      // The runner may have it; it is re-sent after the next welcome (the runner dedupes ids).
      const turn = this.meta.turn;
      if (turn?.messageId === messageId && !turn.announced) {
        this.announce(turn, message);
        this.commit();
      }
      return { ok: true, value: { messageId, duplicate: false } };
    }
    if (answer.accepted) return { ok: true, value: { messageId, duplicate: false } };
    // Refused: onReply already forgot the message, so the same clientMessageId may be retried.
    if (answer.error.code === 'invalid_message') {
      return { ok: false, status: 400, code: 'invalid_request', message: `the runner refused the message: ${answer.error.message}` };
    }
    const why = answer.error.code === 'busy' ? 'a turn is running; wait for turn.done or interrupt it' : answer.error.message;
    return { ok: false, status: 409, code: 'conflict', message: why };
  }

  /** Null when this session now holds a runner slot; otherwise the refusal, with the turn undone. */
  private async claimSlot(input: PostMessageInput, messageId: string): Promise<HubResult<PostMessageResult> | null> {
    const session = this.meta.session;
    if (session === null) return null;
    const undo = () => {
      if (this.meta.turn?.messageId === messageId) this.meta.turn = null;
      // Forgotten, so the same clientMessageId can be sent again once a runner frees up.
      this.log.forgetMessage(messageId);
    };
    let claim;
    try {
      claim = await claimRunnerSlot(this.env.DB, { sessionId: session.id, userId: session.userId, now: this.now, caps: input.runnerCaps });
    } catch (err) {
      undo();
      throw err;
    }
    if (claim.ok) return null;
    undo();
    const whose = claim.limit === 'maxLiveRunnersPerUser' ? 'you already have' : 'all users together already have';
    return {
      ok: false,
      status: 429,
      code: 'runner_limit',
      field: claim.limit,
      message: `${claim.limit}: ${whose} ${claim.cap} live runners; send again when one has stopped (stop or delete a session, or wait for one to go idle)`,
    };
  }

  async interrupt(): Promise<HubResult<{ interrupted: true }>> {
    if (this.meta.session === null) return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    const turn = this.meta.turn;
    if (turn === null) return { ok: false, status: 409, code: 'conflict', message: 'no turn is running' };
    if (!turn.sent) {
      // Never reached a runner: the hub ends the turn itself.
      this.endTurn({ type: 'turn.done', stopReason: 'interrupted' });
      this.commit();
      return { ok: true, value: { interrupted: true } };
    }
    const ws = this.liveRunner();
    if (ws === undefined) {
      turn.interruptQueued = true;
      this.saveMeta();
      return { ok: true, value: { interrupted: true } };
    }
    const answer = await this.request(ws, { type: 'interrupt', requestId: `i-${nextUlid(this.now, null)}` });
    if (answer !== 'timeout' && !answer.accepted && answer.error.code === 'no_turn') {
      return { ok: false, status: 409, code: 'conflict', message: 'no turn is running' };
    }
    return { ok: true, value: { interrupted: true } };
  }

  /** One page of the conversation after `after` (an event id); `nextCursor` is null on the last. */
  async transcript(
    page: { after: string | null; limit: number } = { after: null, limit: 1000 },
  ): Promise<HubResult<{ messages: TranscriptEntry[]; nextCursor: string | null }>> {
    if (this.meta.session === null) return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return { ok: true, value: this.log.transcriptPage(page.after, page.limit) };
  }

  /** Stops the runner, ends every stream, deletes the log and the stored transcript. */
  async destroy(): Promise<void> {
    const session = this.meta.session;
    const launch = this.meta.launch;
    for (const ws of this.ctx.getWebSockets('runner')) {
      this.sendTo(ws, { type: 'shutdown', reason: 'session deleted' });
      closeQuietly(ws, RunnerCloseCode.sessionGone, 'session deleted');
    }
    for (const ws of this.ctx.getWebSockets('viewer')) closeQuietly(ws, VIEWER_CLOSE_SESSION_GONE, 'session deleted');
    if (launch?.ref) {
      await this.launcher()
        .stop(launch.ref, 'session deleted')
        .catch((err) => console.error('session hub: stop on delete failed:', errorText(err)));
    }
    if (session !== null) await deleteTranscript(this.env.TRANSCRIPTS, session.id);
    await this.ctx.storage.deleteAlarm();
    await this.log.clear();
    this.meta = freshMeta();
  }

  // ------------------------------------------------------------------ turns

  private announce(turn: TurnRecord, message: UserMessage): void {
    turn.announced = true;
    this.emit({ type: 'message.user', messageId: turn.messageId, text: message.text }, turn.messageId);
  }

  /** Closes the current turn with a hub-made turn.done (one per announced message, always). */
  private endTurn(done: Extract<AgentEvent, { type: 'turn.done' }>): void {
    const turn = this.meta.turn;
    if (turn === null) return;
    this.meta.turn = null;
    if (turn.announced) {
      this.meta.lastActivityAt = this.now;
      if (this.meta.launch !== null) this.meta.launch.turns += 1;
      this.emit(done, turn.messageId);
    } else {
      // Never accepted by anyone: forget it, so the same clientMessageId can be sent again.
      this.log.forgetMessage(turn.messageId);
    }
  }

  // ------------------------------------------------------------------ lifecycle

  private startLaunch(): void {
    const session = this.meta.session;
    const hubUrl = this.meta.hubUrl;
    if (session === null || hubUrl === null) return;
    const launch = newLaunch(nextUlid(this.now, null), hubUrl, this.now, this.timings);
    this.meta.launch = launch;
    this.commit();
    this.ctx.waitUntil(this.runLauncher(session, launch));
  }

  private async runLauncher(session: HubSessionInfo, launch: LaunchRecord): Promise<void> {
    const secret = this.env.RUNNER_TOKEN_SECRET ?? '';
    if (secret.length < MIN_SECRET_LENGTH) {
      this.failLaunch(launch.id, `RUNNER_TOKEN_SECRET is not configured (at least ${MIN_SECRET_LENGTH} characters)`);
      return;
    }
    let ref: string;
    try {
      const runnerToken = await mintRunnerToken(secret, {
        sessionId: session.id,
        launchId: launch.id,
        expiresAt: this.now + this.timings.tokenTtlMs,
        kind: 'bootstrap',
      });
      ref = await this.launcher().start({
        sessionId: session.id,
        backend: session.backend,
        hubUrl: launch.hubUrl,
        runnerToken,
        launchId: launch.id,
        model: this.meta.model,
        limits: this.meta.limits,
      });
    } catch (err) {
      this.failLaunch(launch.id, `could not start a runner: ${errorText(err)}`);
      return;
    }
    const current = this.meta.launch;
    if (current?.id !== launch.id) {
      // Given up on (deadline, delete) while starting: make sure it does not linger.
      await this.launcher().stop(ref, 'superseded').catch(() => undefined);
      return;
    }
    current.ref = ref;
    this.saveMeta();
    this.syncD1();
  }

  private failLaunch(launchId: string, reason: string): void {
    if (this.meta.launch?.id !== launchId) return;
    this.finish('failed', reason, { code: 'runner_failed', message: reason, retryable: true });
  }

  /**
   * Ends the current launch for good: the runner is stopped and refused from now on, an open
   * turn gets its turn.done, and a message queued meanwhile starts a new runner.
   */
  private finish(rest: 'stopped' | 'failed', reason: string, lost: ErrorInfo): void {
    const launch = this.meta.launch;
    if (launch === null) return;
    this.meta.launch = null;
    this.meta.rest = { state: rest, reason };
    for (const ws of this.ctx.getWebSockets('runner')) {
      const a = ws.deserializeAttachment() as RunnerAttachment | null;
      if (a?.launchId === launch.id) closeQuietly(ws, RunnerCloseCode.sessionGone, reason);
    }
    if (launch.ref !== null) {
      const ref = launch.ref;
      this.ctx.waitUntil(
        this.launcher()
          .stop(ref, reason)
          .catch((err) => console.error('session hub: launcher stop failed:', errorText(err))),
      );
    }
    if (endsTurnWithLaunch(this.meta.turn, rest)) this.endTurn({ type: 'turn.done', stopReason: 'error', error: lost });
    this.commit();
    if (needsRelaunch(this.meta)) this.startLaunch();
  }

  /** Graceful stop: ask the runner to shut down; force it after stopGrace. */
  private stopRunner(reason: string): void {
    const launch = this.meta.launch;
    if (launch === null || launch.stoppingSince !== null) return;
    const ws = this.liveRunner();
    if (ws === undefined) {
      this.finish('stopped', reason, { code: 'runner_stopped', message: reason, retryable: true });
      return;
    }
    launch.stoppingSince = this.now;
    launch.stopReason = reason;
    this.sendTo(ws, { type: 'shutdown', reason });
    this.commit();
  }

  /** Carries out what `decideTick` decided; runs only through `alarm` (serialized with the link). */
  async #tick(): Promise<void> {
    const launch = this.meta.launch;
    if (launch === null) return;
    for (const effect of decideTick(this.meta, this.timings, this.now)) {
      switch (effect.type) {
        case 'finish':
          this.finish('stopped', effect.reason, effect.lost);
          return;
        case 'fail':
          this.failLaunch(launch.id, effect.reason);
          return;
        case 'stop_runner':
          this.stopRunner(effect.reason);
          return;
        case 'poll': {
          launch.nextPollAt = effect.nextPollAt;
          this.saveMeta();
          if (effect.ref === null) break;
          let description;
          try {
            description = await this.launcher().describe(effect.ref);
          } catch (err) {
            console.error('session hub: launcher describe failed:', errorText(err));
          }
          if (this.meta.launch?.id !== launch.id) return;
          const exited = description === undefined ? null : exitedReason(description, launch);
          if (exited !== null) {
            this.failLaunch(launch.id, exited);
            return;
          }
          break;
        }
        case 'renew_token': {
          const ws = this.liveRunner();
          const token = ws === undefined || launch.runnerId === null ? undefined : await this.mint(launch, launch.runnerId);
          if (ws !== undefined && token !== undefined && this.meta.launch?.id === launch.id) {
            this.sendTo(ws, { type: 'token', runnerToken: token });
            launch.tokenRenewAt = this.now + this.timings.tokenTtlMs / 2;
          }
          break;
        }
      }
    }
    this.commit();
  }

  override async alarm(): Promise<void> {
    await this.serialized(() => this.#tick());
  }

  /** A credential for `runnerId`: what the runner reconnects with instead of the bootstrap token. */
  private async mint(launch: LaunchRecord, runnerId: string): Promise<string | undefined> {
    const session = this.meta.session;
    const secret = this.env.RUNNER_TOKEN_SECRET ?? '';
    if (session === null || secret.length < MIN_SECRET_LENGTH) return undefined;
    return mintRunnerToken(secret, {
      sessionId: session.id,
      launchId: launch.id,
      expiresAt: this.now + this.timings.tokenTtlMs,
      kind: 'credential',
      runnerId,
    });
  }

  // ------------------------------------------------------------------ sockets

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket') {
      return Response.json({ error: { code: 'invalid_request', message: 'WebSocket upgrade required' } }, { status: 426 });
    }
    if (url.pathname === '/viewer') return this.acceptViewer(url.searchParams.get('after'));
    if (url.pathname === '/runner') {
      const credentialFor = request.headers.get('X-Switchyard-Token-Runner');
      const auth: RunnerAttachment['auth'] =
        request.headers.get('X-Switchyard-Token-Kind') === 'credential' && credentialFor !== null
          ? { kind: 'credential', runnerId: credentialFor }
          : { kind: 'bootstrap' };
      return this.acceptRunner(request.headers.get('X-Switchyard-Launch') ?? '', auth);
    }
    return Response.json({ error: { code: 'not_found', message: 'not found' } }, { status: 404 });
  }

  private acceptViewer(after: string | null): Response {
    if (this.meta.session === null) {
      return Response.json({ error: { code: 'not_found', message: 'no such session' } }, { status: 404 });
    }
    const pair = new WebSocketPair();
    const server = pair[1];
    this.ctx.acceptWebSocket(server, ['viewer']);
    // Replay and joining the broadcast set happen in one synchronous step: no event can fall
    // between what is replayed and what is broadcast next. The replay is paged: a viewer gets at
    // most one page, then the socket closes and the client resumes from the last id it got, so
    // a long log is never read into memory at once.
    const { events, more } = this.log.replayPage(after);
    for (const frame of toViewerFrames(events)) server.send(frame);
    if (more) closeQuietly(server, VIEWER_CLOSE_REPLAY_PAGE, 'replay page sent; reconnect with Last-Event-ID for the next');
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  private acceptRunner(launchId: string, auth: NonNullable<RunnerAttachment['auth']>): Response {
    const pair = new WebSocketPair();
    const server = pair[1];
    const launch = this.meta.launch;
    if (this.meta.session === null || launch === null) {
      server.accept();
      closeQuietly(server, RunnerCloseCode.sessionGone, 'this session has no runner to serve');
      return new Response(null, { status: 101, webSocket: pair[0] });
    }
    if (launch.id !== launchId) {
      server.accept();
      closeQuietly(server, RunnerCloseCode.superseded, 'another runner serves this session');
      return new Response(null, { status: 101, webSocket: pair[0] });
    }
    if (auth.kind === 'bootstrap' && launch.welcomedAt !== null) {
      server.accept();
      closeQuietly(server, RunnerCloseCode.unauthorized, BOOTSTRAP_SPENT);
      return new Response(null, { status: 101, webSocket: pair[0] });
    }
    const attachment: RunnerAttachment = { kind: 'runner', launchId, runnerId: null, auth };
    this.ctx.acceptWebSocket(server, ['runner']);
    server.serializeAttachment(attachment);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** The welcomed socket of the current launch, if its link is up. */
  private liveRunner(): WebSocket | undefined {
    const launch = this.meta.launch;
    if (launch === null || !launch.connected || launch.runnerId === null) return undefined;
    for (const ws of this.ctx.getWebSockets('runner')) {
      const a = ws.deserializeAttachment() as RunnerAttachment | null;
      if (a?.launchId === launch.id && a.runnerId === launch.runnerId && ws.readyState === OPEN) return ws;
    }
    return undefined;
  }

  private sendTo(ws: WebSocket, msg: HubToRunner): void {
    try {
      ws.send(JSON.stringify(HubToRunnerSchema.parse(msg)));
    } catch (err) {
      console.error('session hub: send to runner failed:', errorText(err));
    }
  }

  private request(ws: WebSocket, msg: Extract<HubToRunner, { type: 'user_message' | 'interrupt' }>): Promise<Reply | 'timeout'> {
    const id = msg.type === 'user_message' ? msg.messageId : msg.requestId;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        resolve('timeout');
      }, this.timings.replyTimeoutMs);
      this.waiters.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.sendTo(ws, msg);
    });
  }

  /** Runner frames are handled one at a time, in arrival order, even across awaits (R2). */
  private serialized(fn: () => Promise<void> | void): Promise<void> {
    const run = this.linkChain.then(fn);
    this.linkChain = run.catch((err) => console.error('session hub: link handler failed:', errorText(err)));
    return this.linkChain;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (!this.ctx.getTags(ws).includes('runner')) return; // viewers only listen
    await this.serialized(() => this.onRunnerFrame(ws, message));
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    await this.serialized(() => this.onSocketGone(ws, code));
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.serialized(() => this.onSocketGone(ws, 1006));
  }

  private onSocketGone(ws: WebSocket, _code: number): void {
    if (!this.ctx.getTags(ws).includes('runner')) return;
    const a = ws.deserializeAttachment() as RunnerAttachment | null;
    const launch = this.meta.launch;
    if (a === null || launch === null || a.launchId !== launch.id || a.runnerId === null || a.runnerId !== launch.runnerId) return;
    // Another socket of the same runner may already have taken over.
    if (this.liveRunnerExcept(ws) !== undefined) return;
    if (!launch.connected) return;
    launch.connected = false;
    launch.disconnectedAt = this.now;
    launch.nextPollAt = this.now + this.timings.pollMs;
    this.commit();
  }

  private liveRunnerExcept(except: WebSocket): WebSocket | undefined {
    const launch = this.meta.launch;
    if (launch === null) return undefined;
    for (const ws of this.ctx.getWebSockets('runner')) {
      if (ws === except) continue;
      const a = ws.deserializeAttachment() as RunnerAttachment | null;
      if (a?.launchId === launch.id && a.runnerId === launch.runnerId && ws.readyState === OPEN) return ws;
    }
    return undefined;
  }

  private protocolError(ws: WebSocket, what: string): void {
    console.warn('session hub: runner protocol error:', what);
    closeQuietly(ws, RunnerCloseCode.protocolError, what);
  }

  private async onRunnerFrame(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (typeof message !== 'string') return this.protocolError(ws, 'binary frames are not part of the protocol');
    if (message === RUNNER_LINK_PING) {
      ws.send(RUNNER_LINK_PONG);
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(message);
    } catch {
      return this.protocolError(ws, 'frame is not JSON');
    }
    const parsed = RunnerToHubSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return this.protocolError(ws, `invalid frame: ${issue ? `${issue.path.join('.')} ${issue.message}` : 'invalid'}`);
    }
    const msg = parsed.data;
    const a = ws.deserializeAttachment() as RunnerAttachment | null;
    const launch = this.meta.launch;
    if (a === null) return;
    if (launch === null || a.launchId !== launch.id) {
      closeQuietly(ws, launch === null ? RunnerCloseCode.sessionGone : RunnerCloseCode.superseded, 'no longer this session’s runner');
      return;
    }
    if (msg.type === 'hello') return this.onHello(ws, a, launch, msg);
    if (a.runnerId === null) return this.protocolError(ws, `${msg.type} before hello`);
    if (a.runnerId !== launch.runnerId) {
      closeQuietly(ws, RunnerCloseCode.superseded, 'another runner serves this session');
      return;
    }
    switch (msg.type) {
      case 'events':
        return this.onEvents(ws, a.runnerId, msg.events);
      case 'transcript':
        return this.onTranscript(ws, a.runnerId, msg.seq, msg.transcript);
      case 'status':
        if (msg.state === 'stopping' && launch.stoppingSince === null) {
          launch.stoppingSince = this.now;
          launch.stopReason = msg.reason ?? 'the runner is stopping';
          this.commit();
        }
        return;
      case 'accepted':
        return this.onReply(msg.inReplyTo, { accepted: true, ...(msg.duplicate === true && { duplicate: true }) });
      case 'reject':
        return this.onReply(msg.inReplyTo, { accepted: false, error: msg.error });
      case 'bye':
        return this.onBye(a.runnerId, msg);
      case 'ping':
        ws.send(RUNNER_LINK_PONG);
        return;
    }
  }

  private async onHello(ws: WebSocket, a: RunnerAttachment, launch: LaunchRecord, hello: Extract<RunnerToHub, { type: 'hello' }>): Promise<void> {
    const session = this.meta.session;
    if (session === null) return;
    if (a.runnerId !== null) return this.protocolError(ws, 'second hello on one link');
    if (hello.sessionId !== session.id) return this.protocolError(ws, `hello for session ${hello.sessionId} on ${session.id}'s link`);
    if (hello.backend !== session.backend) {
      return this.protocolError(ws, `hello for backend ${hello.backend}; this session is pinned to ${session.backend}`);
    }
    // Token replay: whoever can read the launch request (ECS DescribeTasks, CloudTrail) holds the
    // bootstrap token. It binds to the first runner id that says hello with it and dies at the
    // welcome; later links need the credential, which names its runner.
    const auth = a.auth ?? { kind: 'bootstrap' };
    if (auth.kind === 'credential' && auth.runnerId !== hello.runnerId) {
      closeQuietly(ws, RunnerCloseCode.unauthorized, 'this credential belongs to another runner');
      return;
    }
    if (auth.kind === 'bootstrap') {
      if (launch.welcomedAt !== null) {
        closeQuietly(ws, RunnerCloseCode.unauthorized, BOOTSTRAP_SPENT);
        return;
      }
      const bound = launch.bootstrapRunnerId ?? null;
      if (bound !== null && bound !== hello.runnerId) {
        closeQuietly(ws, RunnerCloseCode.unauthorized, 'the launch token is bound to another runner');
        return;
      }
      launch.bootstrapRunnerId = hello.runnerId;
      this.saveMeta();
    }
    const known = this.log.heldSeqOrNull(hello.runnerId);
    const held = known ?? 0;
    if (hello.lastSeq < held) {
      return this.protocolError(ws, `hello.lastSeq ${hello.lastSeq} is below what the hub holds (${held})`);
    }
    let transcript: Transcript | undefined;
    if (known === null && hello.lastSeq === 0 && this.meta.transcript !== null) {
      transcript = await readTranscript(this.env.TRANSCRIPTS, session.id, session.backend);
    }
    const token = await this.mint(launch, hello.runnerId);
    if (this.meta.launch?.id !== launch.id || ws.readyState !== OPEN) return;
    if (known === null) this.log.addRunner(hello.runnerId);

    // One runner link per session: older sockets (a dead link of this runner, or another
    // runner process of this launch) are closed.
    for (const other of this.ctx.getWebSockets('runner')) {
      if (other !== ws) closeQuietly(other, RunnerCloseCode.superseded, 'replaced by a newer link');
    }
    a.runnerId = hello.runnerId;
    ws.serializeAttachment(a);
    const now = this.now;
    launch.runnerId = hello.runnerId;
    launch.connected = true;
    launch.welcomedAt ??= now;
    launch.disconnectedAt = null;
    launch.nextPollAt = null;
    launch.tokenRenewAt = now + this.timings.tokenTtlMs / 2;
    this.sendTo(ws, {
      type: 'welcome',
      ackedSeq: held,
      ...(transcript !== undefined && { transcript }),
      ...(token !== undefined && { runnerToken: token }),
    });

    if (launch.stoppingSince !== null) {
      this.sendTo(ws, { type: 'shutdown', reason: launch.stopReason ?? 'stopping' });
    } else {
      const turn = this.meta.turn;
      if (turn !== null && !turn.delivered) {
        const body = this.log.messageBody(turn.messageId);
        if (body !== null) {
          turn.sent = true;
          this.sendTo(ws, { type: 'user_message', messageId: turn.messageId, message: body });
        }
      }
      if (turn !== null && turn.interruptQueued) {
        turn.interruptQueued = false;
        this.sendTo(ws, { type: 'interrupt', requestId: `i-${nextUlid(now, null)}` });
      }
    }
    this.commit();
  }

  /** `checkSeq`, closing the link on a gap. */
  private seqVerdict(ws: WebSocket, held: number, seq: number): 'dup' | 'next' | 'gap' {
    const verdict = checkSeq(held, seq);
    if (verdict === 'gap') this.protocolError(ws, `gap: got seq ${seq} after ${held}`);
    return verdict;
  }

  private onEvents(ws: WebSocket, runnerId: string, events: Array<{ seq: number; event: AgentEvent; messageId?: string | undefined }>): void {
    const forged = events.find((e) => HUB_ONLY_EVENTS.has(e.event.type));
    if (forged !== undefined) return this.protocolError(ws, `${forged.event.type} is the hub's to send, not a runner's`);
    let held = this.log.heldSeq(runnerId);
    const fresh: typeof events = [];
    for (const e of events) {
      const verdict = this.seqVerdict(ws, held, e.seq);
      if (verdict === 'gap') return;
      if (verdict === 'next') {
        fresh.push(e);
        held = e.seq;
      }
    }
    if (this.meta.logFull === true) return;
    const incoming = fresh.reduce((n, e) => n + utf8.encode(JSON.stringify(e.event)).byteLength, 0);
    if ((this.meta.logBytes ?? 0) + incoming > this.timings.logMaxBytes) return this.logFull();
    let doneTurn = false;
    const stored = this.append(
      fresh.map((e) => ({ event: e.event, messageId: e.messageId })),
      () => {
        this.log.setHeldSeq(runnerId, held);
        const turn = this.meta.turn;
        if (fresh.length > 0) this.meta.lastActivityAt = this.now;
        for (const e of fresh) {
          if (e.event.type === 'turn.done' && turn !== null && (e.messageId === undefined || e.messageId === turn.messageId)) {
            doneTurn = true;
          }
        }
        if (doneTurn) {
          this.meta.turn = null;
          if (this.meta.launch !== null) this.meta.launch.turns += 1;
        }
      },
    );
    // Durable first, then out to viewers, then acked.
    this.broadcast(stored);
    this.sendTo(ws, { type: 'ack', seq: held });
    if (doneTurn) this.commit();
  }

  /**
   * The log is at its cap: the events that would pass it are dropped (never acked, so the runner
   * does not count them as delivered), the turn ends with a coded error, the runner is stopped and
   * new messages are refused. Reading the log (replay, transcript) keeps working.
   */
  private logFull(): void {
    this.meta.logFull = true;
    const message = LOG_FULL_MESSAGE(this.timings.logMaxBytes);
    this.emit({ type: 'error', code: 'session_log_full', message, retryable: false });
    this.endTurn({ type: 'turn.done', stopReason: 'error', error: { code: 'session_log_full', message, retryable: false } });
    this.stopRunner('the session event log is full');
    this.commit();
  }

  private async onTranscript(ws: WebSocket, runnerId: string, seq: number, transcript: Transcript): Promise<void> {
    const session = this.meta.session;
    if (session === null) return;
    const held = this.log.heldSeq(runnerId);
    const verdict = this.seqVerdict(ws, held, seq);
    if (verdict === 'gap') return;
    if (verdict === 'next') {
      if (transcript.backend !== session.backend) {
        return this.protocolError(ws, `transcript for ${transcript.backend}; this session is ${session.backend}`);
      }
      const key = await putTranscript(this.env.TRANSCRIPTS, session.id, transcript, { runnerId, seq });
      this.log.transaction(() => {
        this.log.setHeldSeq(runnerId, seq);
        this.meta.transcript = {
          key,
          sha256: transcript.sha256,
          bytes: transcript.bytes,
          resumeId: transcript.resumeId,
          storedAt: this.now,
        };
        this.saveMeta();
      });
    }
    if (ws.readyState === OPEN) this.sendTo(ws, { type: 'ack', seq: Math.max(held, seq) });
  }

  private onReply(id: string, reply: Reply): void {
    const turn = this.meta.turn;
    if (turn !== null && turn.messageId === id) {
      if (reply.accepted) {
        turn.delivered = true;
        if (!turn.announced) {
          const body = this.log.messageBody(id);
          if (body !== null) this.announce(turn, body);
        }
      } else {
        this.endTurn({
          type: 'turn.done',
          stopReason: 'error',
          error: { code: `runner_${reply.error.code}`, message: `the runner refused the message: ${reply.error.message}`, retryable: reply.error.retryable },
        });
      }
      this.commit();
    }
    const waiter = this.waiters.get(id);
    if (waiter !== undefined) {
      this.waiters.delete(id);
      waiter(reply);
    }
  }

  private onBye(runnerId: string, bye: Extract<RunnerToHub, { type: 'bye' }>): void {
    const outcome = byeOutcome(bye, this.log.heldSeq(runnerId), this.meta.launch?.stopReason ?? null);
    if (outcome.lostEvents > 0) {
      this.emit({
        type: 'error',
        code: 'runner_events_lost',
        message: `the runner stopped with ${outcome.lostEvents} events the hub never received`,
        retryable: false,
      });
    }
    this.finish(outcome.rest, outcome.reason, outcome.lost);
  }
}
