import {
  RunnerCloseCode,
  type AgentEvent,
  type ErrorInfo,
  type HubToRunner,
  type UserMessage,
} from '@switchyard/protocol';
import type { Launcher } from '../launchers/launcher.ts';
import { claimPooledRunner, nothingToRestore } from '../pool/claim.ts';
import { WorkspaceLedger } from '../workspace/ledger.ts';
import { repositoryAllowLoopback } from '../sessions/repository-policy.ts';
import { HubApprovals } from './approvals.ts';
import { EventLog, type LogItem, type MetaTouch } from './event-log.ts';
import {
  deriveState,
  endsTurnWithLaunch,
  needsRelaunch,
  newLaunch,
  nextDeadline,
  statusChange,
  type LaunchRecord,
  type Meta,
  type TurnRecord,
} from './lifecycle.ts';
import { attachmentOf, closeQuietly, liveRunner, sendToRunner, type RunnerAuth } from '../runner-link/sockets.ts';
import { releaseRunnerSlotStatement } from '../runner-link/slots.ts';
import { MIN_SECRET_LENGTH, mintRunnerToken } from '../runner-link/token.ts';
import { pendingRepository } from './pending-repository.ts';
import { hubRuntime, type HubTimings } from './runtime.ts';
import type { HubSessionInfo } from './types.ts';
import { nextUlid } from './ulid.ts';
import { toViewerFrames, type StoredEvent } from './viewer-frames.ts';

// What a session hub does to itself, shared by its RPC methods (session-hub.ts), its tick and
// the runner link (runner-link/frames.ts): keep the lifecycle record, log and broadcast events,
// derive and publish state, arm the alarm, start and end launches, mint runner tokens, and talk
// to the live runner. It is a plain object held by the Durable Object, so none of this is
// reachable over RPC. The rules it applies are in lifecycle.ts.

export type Reply = { accepted: true; duplicate?: boolean } | { accepted: false; error: ErrorInfo };

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class HubCore {
  meta: Meta;
  readonly log: EventLog;
  readonly ctx: DurableObjectState;
  readonly env: Env;
  readonly approvals: HubApprovals;
  readonly #waiters = new Map<string, (reply: Reply) => void>();
  #d1Chain: Promise<void> = Promise.resolve();
  /** Launches whose launcher start is running in this instance (see `launchRef`). */
  readonly #starting = new Map<string, Promise<void>>();
  /** The claim now asking the coordinator with the queued message (in memory, as the start is). */
  #claimCarrying: ClaimCarrying | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    this.ctx = ctx;
    this.env = env;
    this.log = new EventLog(ctx.storage);
    this.meta = this.log.loadMeta();
    this.approvals = new HubApprovals(this);
  }

  saveMeta(): void {
    this.log.saveMeta(this.meta);
  }

  get now(): number {
    return hubRuntime().clock();
  }

  get timings(): HubTimings {
    return hubRuntime().timings(this.env);
  }

  launcher(): Launcher {
    return hubRuntime().launcherFor(this.env);
  }

  /** Appends events to the log (one transaction with `also`), returning what was stored. */
  append(items: LogItem[], also?: () => MetaTouch): StoredEvent[] {
    try {
      return this.log.append(this.meta, items, this.now, also);
    } catch (err) {
      // Rolled back on disk; forget what the failed transaction changed in memory too.
      this.meta = this.log.loadMeta();
      throw err;
    }
  }

  broadcast(events: StoredEvent[]): void {
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
  emit(event: AgentEvent, messageId?: string): void {
    this.broadcast(this.append([{ event, messageId }]));
  }

  // ------------------------------------------------------------------ state

  /**
   * Persists meta; if the derived state changed, logs and broadcasts `session.status` and
   * mirrors it into D1. Always re-arms the alarm.
   */
  commit(): void {
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
  syncD1(): void {
    const session = this.meta.session;
    if (session === null) return;
    this.#d1Chain = this.#d1Chain
      .then(async () => {
        if (this.meta.session === null) return;
        const { state, reason } = deriveState(this.meta);
        const launch = this.meta.launch;
        const update = this.env.DB.prepare(
          'UPDATE sessions SET state = ?, state_reason = ?, runner_ref = ?, updated_at = ?, stopped_at = ? WHERE id = ?',
        ).bind(state, reason, launch?.ref ?? null, this.now, launch === null ? this.now : null, session.id);
        // No launch: the runner slot goes back (read at write time, so a relaunch keeps it).
        await this.env.DB.batch(
          launch === null ? [update, releaseRunnerSlotStatement(this.env.DB, session.id)] : [update],
        );
      })
      .catch((err) => console.error('session hub: D1 state mirror failed:', errorText(err)));
  }

  arm(): void {
    const lifecycle = nextDeadline(this.meta, this.timings);
    const expiry = this.approvals.nextExpiry();
    const deadline = expiry === null ? lifecycle : lifecycle === null ? expiry : Math.min(lifecycle, expiry);
    // Deadlines are in the hub clock's time; the alarm is set by the wall clock, so an
    // injected clock in tests never makes the alarm fire in a loop.
    const p =
      deadline === null
        ? this.ctx.storage.deleteAlarm()
        : this.ctx.storage.setAlarm(Date.now() + Math.max(0, deadline - this.now));
    p.catch((err) => console.error('session hub: alarm update failed:', errorText(err)));
  }

  announce(turn: TurnRecord, message: UserMessage): void {
    turn.announced = true;
    this.emit({ type: 'message.user', messageId: turn.messageId, text: message.text }, turn.messageId);
  }

  /** Closes the current turn with a hub-made turn.done (one per announced message, always). */
  endTurn(done: Extract<AgentEvent, { type: 'turn.done' }>): void {
    const turn = this.meta.turn;
    if (turn === null) return;
    // Nothing waits for a person once its turn is over; the decisions are logged before the end.
    this.approvals.resolveAllPending(done.stopReason === 'interrupted' ? 'interrupted' : 'runner_lost');
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

  startLaunch(): void {
    const session = this.meta.session;
    const hubUrl = this.meta.hubUrl;
    if (session === null || hubUrl === null) return;
    const pending = pendingRepository(session, new WorkspaceLedger(this.ctx.storage).baseline() !== null);
    if (!pending.ok) {
      this.refuseStart(pending.error);
      return;
    }
    const launch = newLaunch(nextUlid(this.now, null), hubUrl, this.now, this.timings);
    this.meta.launch = launch;
    this.commit();
    const started = this.runLauncher(session, launch);
    this.#starting.set(launch.id, started);
    void started.finally(() => this.#starting.delete(launch.id));
    this.ctx.waitUntil(started);
  }

  /** The runner's link is gone: the reconnect grace starts, and the launcher is asked meanwhile. */
  linkLost(launch: LaunchRecord): void {
    launch.connected = false;
    launch.disconnectedAt = this.now;
    launch.nextPollAt = this.now + this.timings.pollMs;
  }

  /**
   * Settles once the coordinator has answered a claim now carrying this message, and this launch
   * has taken its answer (the message marked sent if it went); undefined when no such claim runs.
   */
  claimSettled(messageId: string): Promise<void> | undefined {
    return this.#claimCarrying?.messageId === messageId ? this.#claimCarrying.settled : undefined;
  }

  /**
   * The launcher's ref of this launch, once its start has answered: a runner may dial before it
   * has (a pooled runner dials the moment it is claimed). Null when the launch ended, or when its
   * start is not running in this instance (evicted meanwhile: the connect deadline ends it).
   */
  async launchRef(launch: LaunchRecord): Promise<string | null> {
    if (launch.ref === null) await this.#starting.get(launch.id);
    return this.meta.launch?.id === launch.id ? this.meta.launch.ref : null;
  }

  private async runLauncher(session: HubSessionInfo, launch: LaunchRecord): Promise<void> {
    try {
      await this.launchRunner(session, launch);
    } finally {
      // A message that went with the claim is marked sent by now (or the launch was given up).
      this.#claimTaken(launch.id);
    }
  }

  #claimTaken(launchId: string): void {
    if (this.#claimCarrying?.launchId !== launchId) return;
    this.#claimCarrying.taken();
    this.#claimCarrying = null;
  }

  private async launchRunner(session: HubSessionInfo, launch: LaunchRecord): Promise<void> {
    let ref: string;
    let sentWithClaim: string | null = null;
    let pooledRunnerId: string | null = null;
    try {
      const runnerToken = await this.mint(launch, { kind: 'bootstrap' });
      if (runnerToken === undefined) {
        this.failLaunch(launch.id, `RUNNER_TOKEN_SECRET is not configured (at least ${MIN_SECRET_LENGTH} characters)`);
        return;
      }
      const fresh = nothingToRestore(this.meta, new WorkspaceLedger(this.ctx.storage).generation === 0);
      // With nothing to restore the queued message rides with a claim, so the pooled CLI starts on
      // it while the runner dials.
      const turn = this.meta.turn;
      const body = fresh && turn !== null && !turn.sent ? this.log.messageBody(turn.messageId) : null;
      // A warm pooled runner if one fits; otherwise a cold launch (docs/DESIGN.md "Warm runner pool").
      if (turn !== null && body !== null) this.#claimCarrying = carrying(launch.id, turn.messageId);
      const pooled = await claimPooledRunner(this.env, this.meta, {
        hubUrl: launch.hubUrl,
        runnerToken,
        ...(turn !== null && body !== null && { first: { messageId: turn.messageId, message: body } }),
      });
      // The message stayed here: an interrupt waiting for the claim may end the turn at once.
      if (pooled?.firstSent !== true) this.#claimTaken(launch.id);
      if (pooled?.firstSent === true && turn !== null) sentWithClaim = turn.messageId;
      pooledRunnerId = pooled?.runnerId ?? null;
      ref =
        pooled?.ref ??
        (await this.launcher().start({
          sessionId: session.id,
          backend: session.backend,
          hubUrl: launch.hubUrl,
          runnerToken,
          launchId: launch.id,
          model: this.meta.model,
          limits: { idleMs: this.meta.limits.idleMs, maxLifetimeMs: this.meta.limits.maxLifetimeMs },
          ...(session.repository !== undefined &&
            repositoryAllowLoopback(this.env) && { repositoryAllowLoopback: true }),
          // With nothing to restore a cold runner starts its CLI before the welcome; with no message
          // waiting (started ahead), that CLI takes its first turn meanwhile too.
          ...(fresh && {
            fresh: true,
            ...(this.meta.turn === null && { warmUp: true }),
          }),
        }));
    } catch (err) {
      this.failLaunch(launch.id, `could not start a runner: ${errorText(err)}`);
      return;
    }
    const current = this.meta.launch;
    if (current?.id !== launch.id) {
      // Given up on (deadline, delete) while starting: make sure it does not linger.
      await this.launcher()
        .stop(ref, 'superseded')
        .catch(() => undefined);
      return;
    }
    current.ref = ref;
    if (pooledRunnerId !== null) {
      current.pooled = true;
      // The claim's token went to that runner alone; bound to its id before any hello is judged
      // (a hello waits for this start), it admits no other runner id even if it leaked.
      current.bootstrapRunnerId = pooledRunnerId;
    }
    // The runner may run it from now on: if this launch ends, the turn ends with it (not resent).
    if (this.meta.turn !== null && this.meta.turn.messageId === sentWithClaim) this.meta.turn.sent = true;
    this.saveMeta();
    this.syncD1();
  }

  /** A start that cannot happen: the waiting turn ends with `error`, logged as an event too; no runner. */
  refuseStart(error: ErrorInfo): void {
    this.emit({ type: 'error', ...error }, this.meta.turn?.messageId);
    this.endTurn({ type: 'turn.done', stopReason: 'error', error });
    this.commit();
    // The runner slot the message claimed goes back (D1 releases it while there is no launch).
    this.syncD1();
  }

  failLaunch(launchId: string, reason: string): void {
    if (this.meta.launch?.id !== launchId) return;
    this.finish('failed', reason, { code: 'runner_failed', message: reason, retryable: true });
  }

  /**
   * Ends the current launch for good: the runner is stopped and refused from now on, an open
   * turn gets its turn.done, and a message queued meanwhile starts a new runner.
   */
  finish(rest: 'stopped' | 'failed', reason: string, lost: ErrorInfo): void {
    const launch = this.meta.launch;
    if (launch === null) return;
    this.meta.launch = null;
    this.meta.rest = { state: rest, reason };
    for (const ws of this.ctx.getWebSockets('runner')) {
      if (attachmentOf(ws)?.launchId === launch.id) closeQuietly(ws, RunnerCloseCode.sessionGone, reason);
    }
    if (launch.ref !== null) {
      const ref = launch.ref;
      this.ctx.waitUntil(
        this.launcher()
          .stop(ref, reason)
          .catch((err) => console.error('session hub: launcher stop failed:', errorText(err))),
      );
    }
    // The runner's CLI is gone with it: whatever it asked can no longer be answered.
    this.approvals.resolveAllPending('runner_lost');
    if (endsTurnWithLaunch(this.meta.turn, rest)) this.endTurn({ type: 'turn.done', stopReason: 'error', error: lost });
    this.commit();
    if (needsRelaunch(this.meta)) this.startLaunch();
  }

  /** Graceful stop: ask the runner to shut down; force it after stopGrace. */
  stopRunner(reason: string): void {
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

  /**
   * The one way runner tokens are made: the launch's bootstrap token (in the launch request) or
   * a credential for one runner id (in its welcome and renewals). Undefined without a session or
   * a usable RUNNER_TOKEN_SECRET.
   */
  async mint(launch: LaunchRecord, who: RunnerAuth): Promise<string | undefined> {
    const session = this.meta.session;
    const secret = this.env.RUNNER_TOKEN_SECRET ?? '';
    if (session === null || secret.length < MIN_SECRET_LENGTH) return undefined;
    return mintRunnerToken(secret, {
      sessionId: session.id,
      launchId: launch.id,
      expiresAt: this.now + this.timings.tokenTtlMs,
      ...who,
    });
  }

  /** The welcomed socket of the current launch, if its link is up (other than `except`). */
  liveRunner(except?: WebSocket): WebSocket | undefined {
    return liveRunner(this.ctx.getWebSockets('runner'), this.meta.launch, except);
  }

  sendTo(ws: WebSocket, msg: HubToRunner): void {
    sendToRunner(ws, msg);
  }

  /** Sends a user message or interrupt and waits for the runner's answer (or the reply timeout). */
  request(
    ws: WebSocket,
    msg: Extract<HubToRunner, { type: 'user_message' | 'interrupt' }>,
  ): Promise<Reply | 'timeout'> {
    const id = msg.type === 'user_message' ? msg.messageId : msg.requestId;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(id);
        resolve('timeout');
      }, this.timings.replyTimeoutMs);
      this.#waiters.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.sendTo(ws, msg);
    });
  }

  /** Hands the runner's answer to the request waiting for it, if any. */
  settle(id: string, reply: Reply): void {
    const waiter = this.#waiters.get(id);
    if (waiter === undefined) return;
    this.#waiters.delete(id);
    waiter(reply);
  }
}

interface ClaimCarrying {
  launchId: string;
  messageId: string;
  settled: Promise<void>;
  taken: () => void;
}

function carrying(launchId: string, messageId: string): ClaimCarrying {
  let taken!: () => void;
  const settled = new Promise<void>((resolve) => {
    taken = resolve;
  });
  return { launchId, messageId, settled, taken };
}
