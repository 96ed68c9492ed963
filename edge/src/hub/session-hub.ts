import { DurableObject } from 'cloudflare:workers';
import { RUNNER_LINK_PING, RUNNER_LINK_PONG, RunnerCloseCode, type UserMessage } from '@switchyard/protocol';
import { errorBody } from '../errors.ts';
import { errorText, HubCore } from './hub-core.ts';
import { decideTick, deriveState, exitedReason, freshMeta, newTurn } from './lifecycle.ts';
import { LOG_FULL_MESSAGE, RunnerFrames } from '../runner-link/frames.ts';
import { claimRunnerSlot, type RunnerCaps } from '../runner-link/slots.ts';
import {
  closeQuietly,
  refusal,
  runnerAuthFrom,
  type RunnerAttachment,
  type RunnerAuth,
} from '../runner-link/sockets.ts';
import type { Resolution } from './approvals.ts';
import { deleteTranscript } from './transcript-store.ts';
import {
  HubWorkspace,
  type WorkspaceDiffInputs,
  type WorkspaceResult,
  type WorkspaceWriter,
} from '../workspace/hub-workspace.ts';
import type { BlobLocation, PackedBlob } from '../workspace/pack-index.ts';
import type {
  WorkspaceBaseline,
  WorkspaceCommit,
  WorkspaceCommitResult,
  WorkspaceLimits,
  WorkspaceManifest,
} from '@switchyard/protocol';
import type {
  HubResult,
  HubSessionInfo,
  HubSnapshot,
  AnswerApprovalInput,
  HubRefusal,
  LaunchInput,
  PostMessageInput,
  PostMessageResult,
  StartRunnerResult,
  TranscriptEntry,
} from './types.ts';
import { nextUlid } from './ulid.ts';
import {
  presenceFrame,
  presenceOf,
  toViewerFrames,
  VIEWER_CLOSE_REPLAY_PAGE,
  VIEWER_CLOSE_SESSION_GONE,
  type ViewerAttachment,
} from './viewer-frames.ts';

// One SessionHub per session (DESIGN.md "Data path"; decisions in "Session hub decisions").
// This file is the Durable Object shell: the RPC methods the Worker calls, the socket hooks and
// the alarm. workerd exposes every prototype method over RPC, so everything else is either a
// `#` method or lives in plain objects held as fields. Longer than 400 lines on purpose: every
// RPC method and socket hook has to be a method of this class, so the file is as long as the
// hub's surface (sessions, approvals, workspaces); each method checks, serializes and delegates:
// - hub-core.ts: the lifecycle record (`meta`, one JSON row, so the object can be evicted at any
//   time) and what the hub does to itself: log and broadcast events, publish state changes as
//   `session.status` (mirrored into D1), arm the alarm, start and end launches, mint tokens;
// - lifecycle.ts: the rules, pure (state, deadlines, what a tick or a bye decides);
// - ../runner-link/: the runner link (frames.ts, sockets.ts; a hibernatable socket tagged `runner`);
// - event-log.ts: SQLite (every event gets a strictly increasing ULID and is written before it
//   is sent anywhere); transcript-store.ts: R2.
// Viewers are hibernatable sockets tagged `viewer`, each held by the Worker invocation serving
// one SSE response: the hub replays what a viewer missed, then broadcasts.

export class SessionHub extends DurableObject<Env> {
  // Fields, not methods: nothing here is reachable over RPC (workerd exposes prototype methods).
  private readonly hub: HubCore;
  private readonly frames: RunnerFrames;
  private readonly workspace: HubWorkspace;
  private linkChain: Promise<void> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.hub = new HubCore(ctx, env);
    this.frames = new RunnerFrames(this.hub);
    this.workspace = new HubWorkspace(this.hub);
    // Runner heartbeats are answered without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(RUNNER_LINK_PING, RUNNER_LINK_PONG));
  }

  // ------------------------------------------------------------------ RPC from the Worker

  async create(session: HubSessionInfo): Promise<HubSnapshot> {
    if (this.hub.meta.session === null) {
      this.hub.meta.session = session;
      this.hub.meta.lastActivityAt = this.hub.now;
      this.hub.meta.shown = deriveState(this.hub.meta);
      this.hub.saveMeta();
    }
    return this.#snapshotNow();
  }

  async snapshot(): Promise<HubResult<HubSnapshot>> {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return { ok: true, value: this.#snapshotNow() };
  }

  #snapshotNow(): HubSnapshot {
    const { state, reason } = deriveState(this.hub.meta);
    const l = this.hub.meta.launch;
    return {
      state,
      stateReason: reason,
      turn: this.hub.meta.turn === null ? null : { messageId: this.hub.meta.turn.messageId },
      runner:
        l === null
          ? null
          : { launchId: l.id, ref: l.ref, runnerId: l.runnerId, connected: l.connected, startedAt: l.startedAt },
      lastEventId: this.hub.meta.lastEventId,
    };
  }

  async postMessage(input: PostMessageInput): Promise<HubResult<PostMessageResult>> {
    const hubIn = Date.now();
    const result = await this.#postMessage(input);
    return result.ok && this.hub.timings.benchHops === true ? { ok: true, value: { ...result.value, hubIn } } : result;
  }

  async #postMessage(input: PostMessageInput): Promise<HubResult<PostMessageResult>> {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    if (input.clientMessageId !== undefined) {
      const seen = this.hub.log.messageIdForClientId(input.clientMessageId);
      if (seen !== null) return { ok: true, value: { messageId: seen, duplicate: true } };
    }
    if (this.hub.meta.turn !== null) {
      return {
        ok: false,
        status: 409,
        code: 'conflict',
        message: 'a turn is running; wait for turn.done or interrupt it',
      };
    }
    const full = this.#logFullRefusal();
    if (full !== null) return full;
    const now = this.hub.now;
    const messageId = nextUlid(now, null);
    const message: UserMessage = { text: input.text, ...(input.images !== undefined && { images: input.images }) };
    this.hub.log.addMessage(messageId, input.clientMessageId ?? null, message, now);
    this.hub.meta.turn = newTurn(messageId);
    this.#takeLaunchInput(input);

    if (this.hub.meta.launch === null) {
      // This message starts a runner: it needs a slot under the caps. meta.turn is already set,
      // so a concurrent message to this session is a 409 while the claim is in flight.
      const refused = await this.#claimSlot(input.runnerCaps, () => {
        if (this.hub.meta.turn?.messageId === messageId) this.hub.meta.turn = null;
        // Forgotten, so the same clientMessageId can be sent again once a runner frees up.
        this.hub.log.forgetMessage(messageId);
      });
      if (refused !== null) return refused;
    }

    const ws = this.hub.meta.launch?.stoppingSince == null ? this.hub.liveRunner() : undefined;
    if (ws === undefined) {
      // No runner to ask: the hub accepts the message now and delivers it when one says hello
      // (a runner that is stopping is left to finish; the next one gets the message).
      this.hub.announce(this.hub.meta.turn, message);
      if (this.hub.meta.launch === null) this.hub.startLaunch();
      else this.hub.commit();
      return { ok: true, value: { messageId, duplicate: false } };
    }

    const sending = this.hub.meta.turn;
    const reply = this.hub.request(ws, { type: 'user_message', messageId, message });
    // Recorded as sent once it is (request sends synchronously), and saved before the await, so
    // an eviction while waiting leaves a record that matches what the runner may have.
    sending.sent = true;
    this.hub.saveMeta();
    const answer = await reply;
    if (answer === 'timeout') {
      // The runner may have it; it is re-sent after the next welcome (the runner dedupes ids).
      const turn = this.hub.meta.turn;
      if (turn?.messageId === messageId && !turn.announced) {
        this.hub.announce(turn, message);
        this.hub.commit();
      }
      return { ok: true, value: { messageId, duplicate: false } };
    }
    if (answer.accepted) return { ok: true, value: { messageId, duplicate: false } };
    // Refused: onReply already forgot the message, so the same clientMessageId may be retried.
    if (answer.error.code === 'invalid_message') {
      return {
        ok: false,
        status: 400,
        code: 'invalid_request',
        message: `the runner refused the message: ${answer.error.message}`,
      };
    }
    const why =
      answer.error.code === 'busy' ? 'a turn is running; wait for turn.done or interrupt it' : answer.error.message;
    return { ok: false, status: 409, code: 'conflict', message: why };
  }

  /**
   * Starts this session's runner ahead of its first message, so the launch (a container start,
   * or a pooled runner's dial) overlaps the person's typing (docs/DESIGN.md "Starting ahead").
   */
  async startRunner(input: LaunchInput): Promise<HubResult<StartRunnerResult>> {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    // A launch, or a message claiming a slot for one: a runner is already on its way.
    if (this.#runnerUnderway()) return { ok: true, value: { started: false } };
    const full = this.#logFullRefusal();
    if (full !== null) return full;
    const refused = await this.#claimSlot(input.runnerCaps, () => undefined);
    if (refused !== null) return refused;
    // A message may have come in during the claim; whichever launches first, the other joins it.
    if (this.#runnerUnderway()) return { ok: true, value: { started: false } };
    this.#takeLaunchInput(input);
    this.hub.startLaunch();
    return { ok: true, value: { started: this.hub.meta.launch !== null } };
  }

  /** A session whose log is full takes no more turns (DESIGN "A runner speaking for the hub, and logs without bounds"). */
  #logFullRefusal(): HubRefusal | null {
    if (this.hub.meta.logFull !== true) return null;
    return {
      ok: false,
      status: 409,
      code: 'session_log_full',
      message: LOG_FULL_MESSAGE(this.hub.timings.logMaxBytes),
    };
  }

  #runnerUnderway(): boolean {
    return this.hub.meta.launch !== null || this.hub.meta.turn !== null;
  }

  /** The settings current now become the next launch's (and a waiting turn's approval rules). */
  #takeLaunchInput(input: LaunchInput): void {
    this.hub.meta.limits = input.limits;
    this.hub.meta.model = input.model;
    this.hub.meta.hubUrl = input.hubUrl;
    this.hub.meta.lastActivityAt = this.hub.now;
    if (input.approvals !== undefined) this.hub.approvals.setConfig(input.approvals);
  }

  /** Null when this session now holds a runner slot; otherwise the refusal, after `undo`. */
  async #claimSlot(caps: RunnerCaps, undo: () => void): Promise<HubRefusal | null> {
    const session = this.hub.meta.session;
    if (session === null) return null;
    let claim;
    try {
      claim = await claimRunnerSlot(this.env.DB, {
        sessionId: session.id,
        userId: session.userId,
        now: this.hub.now,
        caps,
      });
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
      message: `${claim.limit}: ${whose} ${claim.cap} live runner${claim.cap === 1 ? '' : 's'}; send again when one has stopped (a runner stops once its session has been unused for a while, or is deleted)`,
    };
  }

  async interrupt(): Promise<HubResult<{ interrupted: true }>> {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    const asked = this.hub.meta.turn;
    if (asked === null) return { ok: false, status: 409, code: 'conflict', message: 'no turn is running' };
    // A pooled runner's claim may be carrying this very message to a CLI that starts on it at
    // once: the coordinator's answer says whether the message went, and so who ends the turn.
    await this.hub.claimSettled(asked.messageId);
    const turn = this.hub.meta.turn;
    if (turn === null) return { ok: false, status: 409, code: 'conflict', message: 'no turn is running' };
    // Nobody needs to answer what the turn no longer waits for (claude withdraws its questions).
    this.hub.approvals.resolveAllPending('interrupted');
    if (!turn.sent) {
      // Never reached a runner: the hub ends the turn itself.
      this.hub.endTurn({ type: 'turn.done', stopReason: 'interrupted' });
      this.hub.commit();
      return { ok: true, value: { interrupted: true } };
    }
    const ws = this.hub.liveRunner();
    if (ws === undefined) {
      turn.interruptQueued = true;
      this.hub.saveMeta();
      return { ok: true, value: { interrupted: true } };
    }
    const answer = await this.hub.request(ws, { type: 'interrupt', requestId: `i-${nextUlid(this.hub.now, null)}` });
    if (answer !== 'timeout' && !answer.accepted && answer.error.code === 'no_turn') {
      return { ok: false, status: 409, code: 'conflict', message: 'no turn is running' };
    }
    return { ok: true, value: { interrupted: true } };
  }

  /** A person's answer to a pending approval (the Worker checked that they own the session). */
  async answerApproval(
    input: AnswerApprovalInput,
  ): Promise<
    HubResult<Resolution> | { ok: false; status: 409; code: 'conflict'; message: string; resolution: Resolution }
  > {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return this.#serializedValue(() => {
      const r = this.hub.approvals.answer(input.approvalId, input.decision, input.by, input.message);
      if (r.ok) return { ok: true as const, value: r.resolution };
      if (r.status === 404)
        return { ok: false as const, status: 404 as const, code: 'not_found' as const, message: 'no such approval' };
      return {
        ok: false as const,
        status: 409 as const,
        code: 'conflict' as const,
        message: `approval already resolved: ${r.resolution.decision} (${r.resolution.reason})`,
        resolution: r.resolution,
      };
    });
  }

  /** One page of the conversation after `after` (an event id); `nextCursor` is null on the last. */
  async transcript(
    page: { after: string | null; limit: number } = { after: null, limit: 1000 },
  ): Promise<HubResult<{ messages: TranscriptEntry[]; nextCursor: string | null }>> {
    if (this.hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return { ok: true, value: this.hub.log.transcriptPage(page.after, page.limit) };
  }

  // The durable workspace (../workspace/hub-workspace.ts).

  async workspaceManifest(limits: WorkspaceLimits): Promise<WorkspaceResult<WorkspaceManifest>> {
    return this.workspace.manifest(limits);
  }

  async workspaceCommit(
    commit: WorkspaceCommit,
    from: WorkspaceWriter,
    limits: WorkspaceLimits,
    o: { dryRun?: boolean } = {},
  ): Promise<WorkspaceResult<WorkspaceCommitResult>> {
    return this.workspace.commit(commit, from, limits, o);
  }

  /** The workspace's starting point once the repository clone is committed, else null. */
  async workspaceBaseline(): Promise<WorkspaceBaseline | null> {
    return this.workspace.baseline();
  }

  async workspaceDiffInputs(): Promise<WorkspaceResult<WorkspaceDiffInputs>> {
    return this.workspace.diffInputs();
  }

  async workspaceBlobsPacked(pack: string, blobs: PackedBlob[]): Promise<void> {
    this.workspace.blobsPacked(pack, blobs);
  }

  async workspaceBlobLocations(shas: string[]): Promise<Map<string, BlobLocation>> {
    return this.workspace.locateBlobs(shas);
  }

  async workspaceRunnerAllowed(launchId: string, runnerId: string): Promise<boolean> {
    return this.workspace.runnerAllowed(launchId, runnerId);
  }

  /** Stops the runner, ends every stream, deletes the log, the stored transcript and the workspace. */
  async destroy(): Promise<void> {
    const session = this.hub.meta.session;
    const launch = this.hub.meta.launch;
    // Gone from now on, before the first await: a start that answers meanwhile finds its launch
    // superseded and stops its task (`runLauncher`), and nothing else starts one.
    this.hub.meta = freshMeta();
    for (const ws of this.ctx.getWebSockets('runner')) {
      this.hub.sendTo(ws, { type: 'shutdown', reason: 'session deleted' });
      closeQuietly(ws, RunnerCloseCode.sessionGone, 'session deleted');
    }
    for (const ws of this.ctx.getWebSockets('viewer')) closeQuietly(ws, VIEWER_CLOSE_SESSION_GONE, 'session deleted');
    if (launch?.ref) {
      await this.hub
        .launcher()
        .stop(launch.ref, 'session deleted')
        .catch((err) => console.error('session hub: stop on delete failed:', errorText(err)));
    }
    if (session !== null) await deleteTranscript(this.env.TRANSCRIPTS, session.id);
    if (session !== null) await this.workspace.destroy(this.env.TRANSCRIPTS, session.id);
    await this.ctx.storage.deleteAlarm();
    await this.hub.log.clear();
  }

  /** Carries out what `decideTick` decided; runs only through `alarm` (serialized with the link). */
  async #tick(): Promise<void> {
    const launch = this.hub.meta.launch;
    if (launch === null) return;
    // A restart of this object (a deploy, a crash) drops its sockets without a close event: a link
    // still counted as connected with no socket is lost, so the grace and the launcher's poll apply.
    if (launch.connected && this.hub.liveRunner() === undefined) this.hub.linkLost(launch);
    for (const effect of decideTick(this.hub.meta, this.hub.timings, this.hub.now)) {
      switch (effect.type) {
        case 'finish':
          this.hub.finish('stopped', effect.reason, effect.lost);
          return;
        case 'fail':
          this.hub.failLaunch(launch.id, effect.reason);
          return;
        case 'stop_runner':
          this.hub.stopRunner(effect.reason);
          return;
        case 'poll': {
          launch.nextPollAt = effect.nextPollAt;
          this.hub.saveMeta();
          if (effect.ref === null) break;
          let description;
          try {
            description = await this.hub.launcher().describe(effect.ref);
          } catch (err) {
            console.error('session hub: launcher describe failed:', errorText(err));
          }
          if (this.hub.meta.launch?.id !== launch.id) return;
          const exited = description === undefined ? null : exitedReason(description, launch);
          if (exited !== null) {
            this.hub.failLaunch(launch.id, exited);
            return;
          }
          break;
        }
        case 'renew_token': {
          const ws = this.hub.liveRunner();
          const token =
            ws === undefined || launch.runnerId === null
              ? undefined
              : await this.hub.mint(launch, { kind: 'credential', runnerId: launch.runnerId });
          if (ws !== undefined && token !== undefined && this.hub.meta.launch?.id === launch.id) {
            this.hub.sendTo(ws, { type: 'token', runnerToken: token });
            launch.tokenRenewAt = this.hub.now + this.hub.timings.tokenTtlMs / 2;
          }
          break;
        }
      }
    }
    this.hub.commit();
  }

  override async alarm(): Promise<void> {
    await this.#serialized(() => {
      this.hub.approvals.expireDue();
      return this.#tick();
    });
    // Re-armed for the next expiry even when there is no launch to tick.
    this.hub.arm();
  }

  // ------------------------------------------------------------------ sockets

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket') {
      return Response.json(errorBody('invalid_request', 'WebSocket upgrade required'), { status: 426 });
    }
    if (url.pathname === '/viewer')
      return this.#acceptViewer(url.searchParams.get('after'), url.searchParams.get('name') ?? 'someone');
    if (url.pathname === '/runner')
      return this.#acceptRunner(request.headers.get('X-Switchyard-Launch') ?? '', runnerAuthFrom(request.headers));
    return Response.json(errorBody('not_found', 'not found'), { status: 404 });
  }

  #acceptViewer(after: string | null, name: string): Response {
    if (this.hub.meta.session === null) {
      return Response.json(errorBody('not_found', 'no such session'), { status: 404 });
    }
    const pair = new WebSocketPair();
    const server = pair[1];
    this.ctx.acceptWebSocket(server, ['viewer']);
    // Replay and joining the broadcast set happen in one synchronous step: no event can fall
    // between what is replayed and what is broadcast next. The replay is paged: a viewer gets at
    // most one page, then the socket closes and the client resumes from the last id it got, so
    // a long log is never read into memory at once.
    const { events, more } = this.hub.log.replayPage(after);
    for (const frame of toViewerFrames(events)) server.send(frame);
    if (more) {
      closeQuietly(server, VIEWER_CLOSE_REPLAY_PAGE, 'replay page sent; reconnect with Last-Event-ID for the next');
    } else {
      // A replay-page socket is gone at once: only a socket that stays counts as watching.
      server.serializeAttachment({ kind: 'viewer', name } satisfies ViewerAttachment);
      this.#publishPresence();
    }
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** Tells every viewer who is watching (`gone`: a socket closing right now, not counted). */
  #publishPresence(gone?: WebSocket): void {
    const open = this.ctx.getWebSockets('viewer').filter((ws) => ws !== gone);
    const names = open.flatMap((ws) => {
      const a = ws.deserializeAttachment() as ViewerAttachment | null;
      return a?.kind === 'viewer' ? [a.name] : [];
    });
    const frame = presenceFrame(presenceOf(names));
    for (const ws of open) {
      try {
        ws.send(frame);
      } catch {
        // a viewer that went away; its own close publishes again
      }
    }
  }

  #acceptRunner(launchId: string, auth: RunnerAuth): Response {
    const pair = new WebSocketPair();
    const server = pair[1];
    const refused = refusal(this.hub.meta, launchId, auth);
    if (refused !== null) {
      server.accept();
      closeQuietly(server, refused.code, refused.reason);
    } else {
      this.ctx.acceptWebSocket(server, ['runner']);
      server.serializeAttachment({ kind: 'runner', launchId, runnerId: null, auth } satisfies RunnerAttachment);
    }
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** `#serialized` for work that answers a value (approval answers race the link's frames). */
  #serializedValue<T>(fn: () => T): Promise<T> {
    const run = this.linkChain.then(fn);
    this.linkChain = run.then(
      () => undefined,
      (err) => console.error('session hub: link handler failed:', errorText(err)),
    );
    return run;
  }

  /** Runner frames are handled one at a time, in arrival order, even across awaits (R2). */
  #serialized(fn: () => Promise<void> | void): Promise<void> {
    const run = this.linkChain.then(fn);
    this.linkChain = run.catch((err) => console.error('session hub: link handler failed:', errorText(err)));
    return this.linkChain;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (!this.ctx.getTags(ws).includes('runner')) return; // viewers only listen
    await this.#serialized(() => this.frames.onRunnerFrame(ws, message));
  }

  override async webSocketClose(ws: WebSocket): Promise<void> {
    if (this.ctx.getTags(ws).includes('viewer')) return this.#publishPresence(ws);
    await this.#serialized(() => this.frames.onSocketGone(ws));
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    if (this.ctx.getTags(ws).includes('viewer')) return this.#publishPresence(ws);
    await this.#serialized(() => this.frames.onSocketGone(ws));
  }
}
