import {
  RUNNER_LINK_PING,
  RUNNER_LINK_PONG,
  RunnerCloseCode,
  RunnerToHubSchema,
  type AgentEvent,
  type RunnerHops,
  type RunnerToHub,
  type Transcript,
} from '@switchyard/protocol';
import type { HubCore, Reply } from '../hub/hub-core.ts';
import { byeOutcome, checkSeq, closesTurn, type LaunchRecord } from '../hub/lifecycle.ts';
import { FrameAcks } from './acks.ts';
import { attachmentOf, BOOTSTRAP_SPENT, closeQuietly, isOpen, type RunnerAttachment } from './sockets.ts';
import { deleteTranscript, putTranscript, readTranscript } from '../hub/transcript-store.ts';
import { pendingRepository } from '../hub/pending-repository.ts';
import { WorkspaceLedger } from '../workspace/ledger.ts';
import { nextUlid } from '../hub/ulid.ts';
import type { StoredEvent } from '../hub/viewer-frames.ts';
import type { IdentityVerdict } from '../launchers/task-identity.ts';

// The runner link as the hub speaks it (DESIGN "Runner link"): frame validation, hello (token
// binding, the sequence ledger, the welcome and whatever waited for it), sequenced events and
// transcripts (stored, broadcast, then acked), replies, status and bye.

const utf8 = new TextEncoder();
/** WebSocket close code 1013 (Try Again Later): the runner reconnects with backoff. */
const TRY_AGAIN_LATER = 1013;
/**
 * Only the hub says what state a session is in, what the user sent, how an approval ended and that
 * the workspace is durable (`workspace.saved` follows a commit it took).
 */
const HUB_ONLY_EVENTS = new Set<string>(['session.status', 'message.user', 'approval.resolved', 'workspace.saved']);

export const LOG_FULL_MESSAGE = (max: number) =>
  `this session's event log reached its limit (${Math.round(max / 1024 / 1024)} MiB); start a new session to continue`;

export class RunnerFrames {
  readonly #hub: HubCore;
  readonly #acks: FrameAcks;

  constructor(hub: HubCore) {
    this.#hub = hub;
    this.#acks = new FrameAcks(
      (ws, runnerId) => hub.sendTo(ws, { type: 'ack', seq: hub.log.heldSeq(runnerId) }),
      () => hub.timings.ackDelayMs,
    );
  }

  /** A runner socket closed or failed: without another live link, the launch waits for a reconnect. */
  onSocketGone(ws: WebSocket): void {
    if (!this.#hub.ctx.getTags(ws).includes('runner')) return;
    const a = attachmentOf(ws);
    const launch = this.#hub.meta.launch;
    if (
      a === null ||
      launch === null ||
      a.launchId !== launch.id ||
      a.runnerId === null ||
      a.runnerId !== launch.runnerId
    )
      return;
    // Another socket of the same runner may already have taken over.
    if (this.#hub.liveRunner(ws) !== undefined) return;
    if (!launch.connected) return;
    this.#hub.linkLost(launch);
    this.#hub.commit();
  }

  private protocolError(ws: WebSocket, what: string): void {
    console.warn('session hub: runner protocol error:', what);
    closeQuietly(ws, RunnerCloseCode.protocolError, what);
  }

  /** One frame from a runner socket; the caller runs these one at a time, in arrival order. */
  async onRunnerFrame(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
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
    const a = attachmentOf(ws);
    const launch = this.#hub.meta.launch;
    if (a === null) return;
    if (launch === null || a.launchId !== launch.id) {
      closeQuietly(
        ws,
        launch === null ? RunnerCloseCode.sessionGone : RunnerCloseCode.superseded,
        'no longer this session’s runner',
      );
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
        return this.onEvents(ws, a.runnerId, msg.events, msg.sentAt);
      case 'transcript':
        return this.onTranscript(ws, a.runnerId, msg.seq, msg.transcript);
      case 'status': {
        let changed = launch.cli !== msg.cli;
        launch.cli = msg.cli;
        if (msg.state === 'stopping' && launch.stoppingSince === null) {
          launch.stoppingSince = this.#hub.now;
          launch.stopReason = msg.reason ?? 'the runner is stopping';
          changed = true;
        }
        if (changed) this.#hub.commit();
        return;
      }
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

  private async onHello(
    ws: WebSocket,
    a: RunnerAttachment,
    launch: LaunchRecord,
    hello: Extract<RunnerToHub, { type: 'hello' }>,
  ): Promise<void> {
    const session = this.#hub.meta.session;
    if (session === null) return;
    if (a.runnerId !== null) return this.protocolError(ws, 'second hello on one link');
    if (hello.sessionId !== session.id)
      return this.protocolError(ws, `hello for session ${hello.sessionId} on ${session.id}'s link`);
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
      // The token proves only that someone read the launch request; the task identity proves it
      // is the task the launch started. Checked before the token binds, so a reader who says hello
      // first binds nothing (docs/DESIGN.md "Runner identity").
      const verdict = await this.verifyIdentity(launch, hello);
      if (this.#hub.meta.launch?.id !== launch.id || !isOpen(ws)) return;
      if (!verdict.ok) {
        console.warn('session hub: runner identity refused:', verdict.error.message);
        if (!verdict.error.retryable) {
          launch.identityRefused = verdict.error.message;
          this.#hub.saveMeta();
        }
        closeQuietly(
          ws,
          verdict.error.retryable ? TRY_AGAIN_LATER : RunnerCloseCode.unauthorized,
          verdict.error.message.slice(0, 120),
        );
        return;
      }
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
      this.#hub.saveMeta();
    }
    const known = this.#hub.log.heldSeqOrNull(hello.runnerId);
    const held = known ?? 0;
    if (hello.lastSeq < held) {
      return this.protocolError(ws, `hello.lastSeq ${hello.lastSeq} is below what the hub holds (${held})`);
    }
    // A runner new to the hub gets the conversation to resume. Its hello may count frames already
    // (an error of a CLI started before the welcome): not a conversation.
    let transcript: Transcript | undefined;
    if (known === null && this.#hub.meta.transcript !== null) {
      transcript = await readTranscript(this.#hub.env.TRANSCRIPTS, session.id, session.backend);
    }
    const token = await this.#hub.mint(launch, { kind: 'credential', runnerId: hello.runnerId });
    // Until the clone is committed as the baseline, every new runner is told to clone first.
    const ledger = new WorkspaceLedger(this.#hub.ctx.storage);
    const pending = pendingRepository(session, ledger.baseline() !== null);
    if (this.#hub.meta.launch?.id !== launch.id || !isOpen(ws)) return;
    if (!pending.ok) {
      // Launched before the check at the start could refuse it (startLaunch refuses such a start).
      this.#hub.emit({ type: 'error', ...pending.error });
      this.#hub.finish('failed', pending.error.message, pending.error);
      return;
    }
    const repository = pending.value;
    if (known === null) this.#hub.log.addRunner(hello.runnerId);

    // One runner link per session: older sockets (a dead link of this runner, or another
    // runner process of this launch) are closed.
    for (const other of this.#hub.ctx.getWebSockets('runner')) {
      if (other !== ws) closeQuietly(other, RunnerCloseCode.superseded, 'replaced by a newer link');
    }
    a.runnerId = hello.runnerId;
    ws.serializeAttachment(a);
    const now = this.#hub.now;
    launch.runnerId = hello.runnerId;
    launch.cli = hello.cli ?? null;
    launch.connected = true;
    launch.welcomedAt ??= now;
    launch.disconnectedAt = null;
    launch.nextPollAt = null;
    launch.tokenRenewAt = now + this.#hub.timings.tokenTtlMs / 2;
    this.#hub.sendTo(ws, {
      type: 'welcome',
      ackedSeq: held,
      ...(transcript !== undefined && { transcript }),
      ...(token !== undefined && { runnerToken: token }),
      ...(session.approvals === 'ask' && { approvals: 'ask' as const }),
      ...(repository !== undefined && { repository }),
      workspaceGeneration: ledger.generation,
    });
    this.#hub.approvals.resendTo(ws);

    if (launch.stoppingSince !== null) {
      this.#hub.sendTo(ws, { type: 'shutdown', reason: launch.stopReason ?? 'stopping' });
    } else {
      const turn = this.#hub.meta.turn;
      if (turn !== null && !turn.delivered) {
        const body = this.#hub.log.messageBody(turn.messageId);
        if (body !== null) {
          this.#hub.sendTo(ws, { type: 'user_message', messageId: turn.messageId, message: body });
          turn.sent = true;
        }
      }
      if (turn?.interruptQueued) {
        turn.interruptQueued = false;
        this.#hub.sendTo(ws, { type: 'interrupt', requestId: `i-${nextUlid(now, null)}` });
      }
    }
    this.#hub.commit();
  }

  /** Whether this hello comes from the task the launch started (the launcher judges). */
  private async verifyIdentity(
    launch: LaunchRecord,
    hello: Extract<RunnerToHub, { type: 'hello' }>,
  ): Promise<IdentityVerdict> {
    const ref = await this.#hub.launchRef(launch);
    if (ref === null) {
      return {
        ok: false,
        error: { code: 'runner_identity_unavailable', message: 'this launch has no task yet', retryable: true },
      };
    }
    // A claimed pooled runner's token was never in a launch request: it went to that runner alone,
    // over the pool link its proof opened. A second STS round trip would only delay the first answer.
    if (this.#hub.meta.launch?.id === launch.id && this.#hub.meta.launch.pooled === true) return { ok: true };
    return this.#hub.launcher().verifyRunner(ref, hello.runnerId, hello.identity);
  }

  /** `checkSeq`, closing the link on a gap. */
  private seqVerdict(ws: WebSocket, held: number, seq: number): 'dup' | 'next' | 'gap' {
    const verdict = checkSeq(held, seq);
    if (verdict === 'gap') this.protocolError(ws, `gap: got seq ${seq} after ${held}`);
    return verdict;
  }

  private onEvents(
    ws: WebSocket,
    runnerId: string,
    events: Array<{ seq: number; event: AgentEvent; messageId?: string | undefined; hops?: RunnerHops | undefined }>,
    sentAt: number | undefined,
  ): void {
    // Bench only; workerd's clock stands still between I/O, so the three hub stamps are one value.
    const hubIn = sentAt !== undefined && this.#hub.timings.benchHops === true ? Date.now() : undefined;
    const forged = events.find((e) => HUB_ONLY_EVENTS.has(e.event.type));
    if (forged !== undefined)
      return this.protocolError(ws, `${forged.event.type} is the hub's to send, not a runner's`);
    let held = this.#hub.log.heldSeq(runnerId);
    const fresh: typeof events = [];
    for (const e of events) {
      const verdict = this.seqVerdict(ws, held, e.seq);
      if (verdict === 'gap') return;
      if (verdict === 'next') {
        fresh.push(e);
        held = e.seq;
      }
    }
    const repeated = this.#hub.approvals.repeatedRequest(fresh);
    if (repeated !== undefined) return this.protocolError(ws, `approval.request: ${repeated} was asked before`);
    if (this.#hub.meta.logFull === true) return;
    const incoming = fresh.reduce((n, e) => n + utf8.encode(JSON.stringify(e.event)).byteLength, 0);
    if ((this.#hub.meta.logBytes ?? 0) + incoming > this.#hub.timings.logMaxBytes) return this.logFull();
    let doneTurn = false;
    // Approval requests get the hub's expiry and a durable row in the same transaction.
    const approvals = this.#hub.approvals.admit(fresh.map((e) => ({ event: e.event, messageId: e.messageId })));
    const stored = this.#hub.append(approvals.items, () => {
      approvals.record();
      this.#hub.log.setHeldSeq(runnerId, held);
      if (fresh.length > 0) this.#hub.meta.lastActivityAt = this.#hub.now;
      doneTurn = closesTurn(this.#hub.meta.turn, fresh);
      if (!doneTurn) return 'log-only';
      this.#hub.meta.turn = null;
      if (this.#hub.meta.launch !== null) this.#hub.meta.launch.turns += 1;
      return 'changed';
    });
    if (hubIn !== undefined && sentAt !== undefined) stampHops(stored, fresh, sentAt, hubIn);
    // Durable first, then out to viewers, then acked (a turn's streamed frames together).
    this.#hub.broadcast(stored);
    if (doneTurn) this.#acks.now(ws, runnerId);
    else this.#acks.later(ws, runnerId);
    this.#hub.approvals.applyPolicy(approvals.requests);
    if (doneTurn) {
      // A turn that ended while asking (the CLI died, or claude withdrew the question).
      const done = fresh.find((e) => e.event.type === 'turn.done')?.event;
      const interrupted = done?.type === 'turn.done' && done.stopReason === 'interrupted';
      this.#hub.approvals.resolveAllPending(interrupted ? 'interrupted' : 'runner_lost');
      this.#hub.commit();
    }
  }

  /**
   * The log is at its cap: the events that would pass it are dropped (never acked, so the runner
   * does not count them as delivered), the turn ends with a coded error, the runner is stopped and
   * new messages are refused. Reading the log (replay, transcript) keeps working.
   */
  private logFull(): void {
    this.#hub.meta.logFull = true;
    const message = LOG_FULL_MESSAGE(this.#hub.timings.logMaxBytes);
    this.#hub.emit({ type: 'error', code: 'session_log_full', message, retryable: false });
    this.#hub.endTurn({
      type: 'turn.done',
      stopReason: 'error',
      error: { code: 'session_log_full', message, retryable: false },
    });
    this.#hub.stopRunner('the session event log is full');
    this.#hub.commit();
  }

  private async onTranscript(ws: WebSocket, runnerId: string, seq: number, transcript: Transcript): Promise<void> {
    const session = this.#hub.meta.session;
    if (session === null) return;
    const held = this.#hub.log.heldSeq(runnerId);
    const verdict = this.seqVerdict(ws, held, seq);
    if (verdict === 'gap') return;
    if (verdict === 'next') {
      if (transcript.backend !== session.backend) {
        return this.protocolError(ws, `transcript for ${transcript.backend}; this session is ${session.backend}`);
      }
      const key = await putTranscript(this.#hub.env.TRANSCRIPTS, session.id, transcript, { runnerId, seq });
      if (this.#hub.meta.session?.id !== session.id) {
        // Deleted while this was being stored: the delete may have come first, so take it away.
        await deleteTranscript(this.#hub.env.TRANSCRIPTS, session.id);
        return;
      }
      this.#hub.log.transaction(() => {
        this.#hub.log.setHeldSeq(runnerId, seq);
        this.#hub.meta.transcript = {
          key,
          sha256: transcript.sha256,
          bytes: transcript.bytes,
          resumeId: transcript.resumeId,
          storedAt: this.#hub.now,
        };
        this.#hub.saveMeta();
      });
    }
    this.#acks.now(ws, runnerId);
  }

  private onReply(id: string, reply: Reply): void {
    if (this.#hub.approvals.delivered(id)) return;
    const turn = this.#hub.meta.turn;
    if (turn !== null && turn.messageId === id) {
      if (reply.accepted) {
        turn.delivered = true;
        if (!turn.announced) {
          const body = this.#hub.log.messageBody(id);
          if (body !== null) this.#hub.announce(turn, body);
        }
      } else {
        this.#hub.endTurn({
          type: 'turn.done',
          stopReason: 'error',
          error: {
            code: `runner_${reply.error.code}`,
            message: `the runner refused the message: ${reply.error.message}`,
            retryable: reply.error.retryable,
          },
        });
      }
      this.#hub.commit();
    }
    this.#hub.settle(id, reply);
  }

  private onBye(runnerId: string, bye: Extract<RunnerToHub, { type: 'bye' }>): void {
    const outcome = byeOutcome(bye, this.#hub.log.heldSeq(runnerId), this.#hub.meta.launch?.stopReason ?? null);
    if (outcome.lostEvents > 0) {
      this.#hub.emit({
        type: 'error',
        code: 'runner_events_lost',
        message: `the runner stopped with ${outcome.lostEvents} events the hub never received`,
        retryable: false,
      });
    }
    this.#hub.finish(outcome.rest, outcome.reason, outcome.lost);
  }
}

/**
 * Bench only: the runner's stamps and the hub's onto what is broadcast. `stored` follows `fresh`
 * one for one (approval admission rewrites events, never adds any); an event without runner stamps gets none.
 */
function stampHops(
  stored: StoredEvent[],
  fresh: ReadonlyArray<{ hops?: RunnerHops | undefined }>,
  sent: number,
  hubIn: number,
): void {
  const hubStored = Date.now();
  for (let i = 0; i < stored.length && i < fresh.length; i++) {
    const runner = fresh[i]?.hops;
    const s = stored[i];
    if (runner !== undefined && s !== undefined) s.hops = { ...runner, sent, hubIn, hubStored, hubSent: Date.now() };
  }
}
