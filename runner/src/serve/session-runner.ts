// Serve mode's I/O shell (the class below). Over 400 lines on purpose: it is the one place where
// the turn machine's effects meet the world, and every effect, hub request and link event is a
// few lines handing off to the module that does the work (cli-slot.ts, hub-link.ts,
// transcript.ts, ../cli/spawn.ts, ../workspace/sync.ts, ../pool/); pulling the handlers apart
// would split the one sequence (inbox → machine → effects) that has to be read in one place.
import { access } from 'node:fs/promises';
import {
  adapterFor,
  AgentEventSchema,
  RunnerToHubSchema,
  WIRE_PROTOCOL_VERSION,
  type AgentCodec,
  type AgentEvent,
  type ApprovalMode,
  type ByeReason,
  type Capabilities,
  type ErrorInfo,
  type HubToRunner,
  type Repository,
  type RunnerStatus,
  type WorkspaceBaseline,
} from '@switchyard/protocol';
import { type CliLaunch, cliSpawnSpec } from '../cli/spawn.ts';
import type { ServeConfig } from '../config.ts';
import type WebSocket from 'ws';
import type { CliProcess } from '../cli/cli-process.ts';
import { ExitCode, messageOf, StepFailure } from '../errors.ts';
import type { Logger } from '../log.ts';
import { piReloadSteps } from '../cli/reload.ts';
import { warmUpFor, type WarmUpStep } from '../cli/warm-up.ts';
import { projectConfigRefusal } from '../sandbox/project-config.ts';
import { modeForCli } from '../sandbox/sandbox.ts';
import { CliSlot } from './cli-slot.ts';
import { EventBuffer } from './event-buffer.ts';
import { HopStamps } from './hop-stamps.ts';
import { HubLink, type HubRequest } from './hub-link.ts';
import { compactHeap } from './heap-compaction.ts';
import { QuietTrigger } from './quiet-trigger.ts';
import { collectTranscript, restoreTranscript, transcriptFile, waitForQuietFile } from './transcript.ts';
import { TurnMachine, type MachineEffect, type MachineInput, type TimerName } from './turn-machine.ts';
import { welcomeRestore } from './welcome-rule.ts';
import { WorkspaceClient, workspaceBaseUrl } from '../workspace/client.ts';
import { WorkspaceSync } from '../workspace/sync.ts';
import { cloneRepository } from '../workspace/clone.ts';
import { CLONE_ERROR_CODE } from '../workspace/clone-plan.ts';
import type { CanaryResult } from '../sandbox/canary.ts';
import { taskIdentityOf, type TaskIdentity } from '../identity/task-identity.ts';

export interface SessionRunnerOptions {
  config: ServeConfig;
  log: Logger;
  /** What `hello` reports: the guard's self-test and the OS wall (with selfTest: until it ends). */
  capabilities: Capabilities;
  /**
   * The guard's self-test, when it still runs as the runner starts (serve, not pooled); calling it
   * starts it or joins the run under way. A fresh session's CLI is spawned first and gets no input
   * until it passed, and is killed if it failed; the hello waits for it, since it reports the
   * result (docs/DESIGN.md "The guard").
   */
  selfTest?: () => Promise<CanaryResult>;
  /** Every CLI of the session is spawned from this (cli/spawn.ts). */
  launch: CliLaunch;
  /**
   * The model proxy answered a warm-up started ahead of the first message itself; this makes it
   * forward. Called before any CLI could make one of the session's model calls: when a CLI is
   * ready after its warm-up, and when a CLI is spawned without one. Pooled mode passes none: there
   * the proxy forwards from the claim.
   */
  forwardModelCalls?: () => void;
  /**
   * The CLI's model call follows within milliseconds (a message was written to it, its last
   * approval answered, its last tool's result came back): the model proxy opens the call's
   * upstream connection meanwhile. A free one is closed after 5 s idle, so a call after a pause —
   * a person's next message, a long tool run, a person deciding — would wait for a new one.
   */
  modelCallComing?: () => void;
}

/** How long the transcript must stay unchanged after a turn before it is read (see waitForQuietFile). */
const TRANSCRIPT_SETTLE = { quietMs: 300, maxMs: 5000 };

/** After the machine finishes, how long beyond the shutdown deadline delivery may still take. */
const DELIVERY_GRACE_MS = 2000;

/** A turn's heap compaction waits until the turn machine has had no input for this long (QuietTrigger). */
const COMPACT_AFTER_QUIET_MS = 1000;

/**
 * Serve mode's I/O shell: feeds the hub link, the CLI and timers into the
 * TurnMachine and carries out the effects it returns.
 */
export class SessionRunner {
  private readonly o: SessionRunnerOptions;
  private readonly machine: TurnMachine;
  private readonly buffer: EventBuffer;
  /** Bench only (SWITCHYARD_BENCH_HOPS=1); undefined otherwise, so the hot path does nothing more. */
  private readonly hops: HopStamps | undefined;
  /**
   * The proof of its task identity, for the pool link and every hello: one per process, since a
   * claim changes neither the runner id nor where the proof goes, so credentials are fetched once.
   */
  readonly identity: TaskIdentity | undefined;
  private link: HubLink;
  /** Pooled mode: resolves once the prewarmed CLI is up (true) or gone (false). */
  private prewarmed: ((ok: boolean) => void) | undefined;
  /** Pooled mode, until the claim: the prewarmed CLI stopped, so this runner is no warm runner any more. */
  private prewarmLost: (() => void) | undefined;
  /**
   * The CLI about to be spawned takes its first turn before it counts as ready (cli/warm-up.ts):
   * a pooled runner's, or a fresh session's started ahead of its first message (SWITCHYARD_WARM_UP).
   */
  private warmUpNext = false;
  /** The durable workspace: restored before the first CLI, saved after each turn and at the end. */
  private workspace: WorkspaceSync;
  private readonly timers = new Map<TimerName, NodeJS.Timeout>();
  private readonly slots = new Map<number, CliSlot>();
  private readonly inbox: MachineInput[] = [];
  private processing = false;
  private resumeHandle: string | undefined;
  /** From the first welcome, before the first CLI is spawned (DESIGN "Tool approvals"). */
  private approvals: ApprovalMode = 'auto';
  /** A user message has reached a CLI (or a transcript was restored): there is a conversation to lose. */
  private conversationStarted = false;
  private restoring: Promise<void> = Promise.resolve();
  /** The welcome's transcript, restored: the handle to resume (undefined: none, or it failed). */
  private welcomeResume: Promise<string | undefined> = Promise.resolve(undefined);
  /**
   * Input to the CLIs (messages, interrupts, closing stdin), in order and never before the first
   * welcome's restore is done: a CLI started before the welcome sees no message before the
   * session's files are in place.
   */
  private cliInput: Promise<void> = Promise.resolve();
  /** Inputs waiting on `cliInput`. With none and `restoring` fulfilled, an input is written at once. */
  private cliInputQueued = 0;
  /** `restoring` (set once, at the first welcome) is fulfilled. */
  private restored = true;
  /** From the first welcome: the repository to clone before the first CLI, until its clone is committed. */
  private repository: Repository | undefined;
  /** The clone under way; cleared when it fails, so the next CLI start (the next message) tries again. */
  private cloning: Promise<void> | undefined;
  /** The clone on disk, once git succeeded (its commit may still have been refused). */
  private cloned: WorkspaceBaseline | undefined;
  private uploads: Promise<void> = Promise.resolve();
  private lastUploadSha: string | undefined;
  private lastStatus: RunnerStatus | undefined;
  /** The heap compaction after a turn, once the machine has been quiet. */
  private readonly quiet = new QuietTrigger(COMPACT_AFTER_QUIET_MS, () => this.compactHeap('turn'));
  private shutdownStartedAt: number | undefined;
  private overflowReported = false;
  private resolveExit!: (code: number) => void;
  private readonly exit = new Promise<number>((resolve) => {
    this.resolveExit = resolve;
  });

  constructor(options: SessionRunnerOptions) {
    this.o = options;
    const c = options.config;
    this.machine = new TurnMachine(
      c.timings,
      options.selfTest !== undefined ? 'pending' : options.capabilities.guard === 'loaded' ? 'passed' : 'failed',
    );
    this.buffer = new EventBuffer(c.buffer);
    this.hops = c.benchHops ? new HopStamps() : undefined;
    this.identity = taskIdentityOf(c);
    this.link = this.newLink();
    this.workspace = this.newWorkspace();
  }

  private newLink(): HubLink {
    const c = this.o.config;
    const options = this.o;
    return new HubLink({
      url: c.hubUrl,
      sessionId: c.sessionId,
      token: c.runnerToken,
      hello: {
        type: 'hello',
        protocol: WIRE_PROTOCOL_VERSION,
        runnerId: c.runnerId,
        sessionId: c.sessionId,
        backend: c.backend,
        cliVersion: options.launch.executable.version,
        capabilities: options.capabilities,
      },
      cli: () => this.machine.cliAtHello,
      identity: this.identity,
      buffer: this.buffer,
      backoff: { baseMs: c.link.backoffBaseMs, maxMs: c.link.backoffMaxMs },
      pingIntervalMs: c.link.pingIntervalMs,
      welcomeTimeoutMs: c.link.welcomeTimeoutMs,
      log: options.log,
      onWelcome: (welcome, first) => this.onWelcome(welcome, first),
      onRequest: (request) => this.onRequest(request),
      onRejected: (error) => this.dispatch({ type: 'fatal', reason: 'fatal', error, exitCode: ExitCode.hubRejected }),
      stampSends: this.hops !== undefined,
    });
  }

  /** What the runner restores for its CLI is the CLI's to change (its group's too in container mode). */
  private readonly modeForCli = (mode: number): number => modeForCli(this.o.capabilities.sandbox, mode);

  private newWorkspace(): WorkspaceSync {
    const options = this.o;
    return new WorkspaceSync({
      root: options.launch.dirs.workspace,
      store: new WorkspaceClient(workspaceBaseUrl(options.config.hubUrl), () => this.link.currentToken),
      log: options.log,
      onError: (error) => this.emit({ type: 'error', ...error }),
      modeForCli: this.modeForCli,
    });
  }

  /**
   * Pooled mode (docs/DESIGN.md "Warm runner pool"): start the CLI before any session is known.
   * Resolves true once it is ready, false if it did not come up. Nothing is linked yet.
   */
  prewarm(onLost: () => void): Promise<boolean> {
    return new Promise((resolve) => {
      this.prewarmed = resolve;
      this.prewarmLost = onLost;
      this.warmUpNext = true;
      this.dispatch({ type: 'prewarm' });
    });
  }

  /**
   * Pooled mode: the claim names the session. The hub link is rebuilt for it before `run()`;
   * the prewarmed CLI keeps running and serves this session only.
   */
  adopt(config: ServeConfig): void {
    this.prewarmLost = undefined;
    this.o.config = config;
    this.link = this.newLink();
    this.workspace = this.newWorkspace();
  }

  /**
   * Pooled mode: the session's first message came with the claim, so the prewarmed CLI takes it
   * now, while the hub link comes up (`firstMessageInputs`). Its events wait in the buffer for the
   * welcome; the hub's copy after the welcome is answered as a duplicate.
   */
  takeFirstMessage(inputs: MachineInput[]): void {
    for (const input of inputs) {
      if (input.type === 'user_message') this.hops?.userMessage(input.messageId);
      this.dispatch(input);
    }
  }

  /**
   * Resolves with the process exit code once the session is over. `early`: a link to the hub
   * dialled while the runner was being set up (HubLink.dial), used for the first connect.
   */
  run(early?: Promise<WebSocket>): Promise<number> {
    const c = this.o.config;
    this.o.log.info('runner starting', { runnerId: c.runnerId, sessionId: c.sessionId, backend: c.backend });
    this.dispatch({ type: 'start' });
    const selfTest = this.o.selfTest;
    // Nothing to restore, so the CLI need not wait for the welcome; never with a guard that
    // failed its self-test, and while it still runs the CLI gets no input (the machine's guard).
    if (c.freshSession && (selfTest !== undefined || this.o.capabilities.guard === 'loaded')) {
      this.o.log.info('fresh session: starting the CLI while the hub link comes up', { warmUp: c.warmUp });
      this.warmUpNext = c.warmUp;
      this.dispatch({ type: 'prewarm' });
    }
    // A fresh session's CLI is spawned before the self-test starts and before the link's WebSocket
    // client is loaded (~40 ms of CPU).
    const cliSpawned = this.slots.get(this.machine.cliGen)?.spawned ?? Promise.resolve();
    if (selfTest === undefined) this.link.start(early);
    else
      void cliSpawned.then(selfTest).then((result) => {
        if (this.machine.stopped) return;
        this.o.capabilities = { ...this.o.capabilities, guard: result.ok ? 'loaded' : 'missing' };
        if (!result.ok)
          this.o.log.error('the tool-call guard failed its self-test; no CLI will be started', {
            problem: result.problem,
          });
        this.dispatch({ type: 'guard', ok: result.ok });
        // The hello reports the result, so the link is built (and adopts the early socket) only now.
        this.link = this.newLink();
        this.link.start(early);
      });
    return this.exit;
  }

  /** SIGTERM and friends: finish or interrupt the turn, upload, say bye. */
  shutdown(reason: ByeReason): void {
    this.dispatch({ type: 'shutdown', reason, graceful: true });
  }

  /** Last resort on process exit: no CLI group may outlive the runner. */
  killAllNow(): void {
    for (const slot of this.slots.values()) slot.kill();
  }

  private onWelcome(welcome: Extract<HubToRunner, { type: 'welcome' }>, first: boolean): void {
    if (first) {
      this.approvals = welcome.approvals ?? 'auto';
      this.repository = welcome.repository;
      const transcript = welcome.transcript;
      // A workspace nothing was ever stored in: no round trip to the store before the first message.
      const hasFiles = welcome.workspaceGeneration !== 0;
      const files = hasFiles ? this.workspace.pull().then(() => undefined) : Promise.resolve();
      this.welcomeResume = transcript ? this.restore(transcript) : Promise.resolve(undefined);
      this.restoring = Promise.all([this.welcomeResume, files]).then(() => undefined);
      this.restored = false;
      this.restoring.then(
        () => {
          this.restored = true;
        },
        () => undefined,
      );
      // A CLI started before the welcome (prewarm) is kept as it is only when the welcome brings
      // nothing; else it is reloaded onto what was restored or replaced (welcome-rule.ts).
      const restore = welcomeRestore(this.o.config.backend, {
        transcript: transcript !== undefined,
        files: hasFiles,
        repository: this.repository !== undefined,
        approvals: this.approvals,
      });
      this.dispatch({ type: 'linked', ...(restore !== undefined && { restore }) });
      // The runner's own start is over once it is linked, restored and its CLI spawned; what is
      // left is the CLI's own start, when no message can reach it: the moment to give back the
      // start's garbage. A CLI already up (a pooled one, or one quicker than the hub) may be taking
      // a message, so then it waits for the turn's end; so does a start that failed.
      const spawned = this.slots.get(this.machine.cliGen)?.spawned;
      Promise.all([this.restoring, spawned]).then(
        () => {
          if (this.lastStatus?.cli === 'starting') this.compactHeap('start');
        },
        () => undefined,
      );
    }
    if (this.lastStatus) this.link.send(this.lastStatus);
  }

  /** Puts the welcome's transcript where the CLI resumes it; resolves with its handle, or undefined. */
  private async restore(
    transcript: NonNullable<Extract<HubToRunner, { type: 'welcome' }>['transcript']>,
  ): Promise<string | undefined> {
    const restored = await restoreTranscript(this.o.config.backend, transcript, this.o.launch.dirs, this.modeForCli);
    if (restored.ok) {
      this.resumeHandle = restored.value;
      this.conversationStarted = true;
      this.lastUploadSha = transcript.sha256;
      this.o.log.info('transcript restored', { bytes: transcript.bytes, resumeId: transcript.resumeId });
      return restored.value;
    }
    // Loud, not silent: the conversation starts over and the session says why.
    this.o.log.error('transcript restore failed', { code: restored.error.code, message: restored.error.message });
    this.emit({ type: 'error', ...restored.error });
    return undefined;
  }

  private onRequest(request: HubRequest): void {
    switch (request.type) {
      case 'user_message':
        this.hops?.userMessage(request.messageId);
        this.dispatch({ type: 'user_message', messageId: request.messageId, message: request.message });
        return;
      case 'interrupt':
        this.dispatch({ type: 'interrupt', requestId: request.requestId });
        return;
      case 'approval_decision': {
        // Answered to the CLI that asked; a decision it no longer waits for (interrupted,
        // restarted, a resend after a reconnect) is dropped. Either way the hub hears it landed.
        const answer = { approvalId: request.approvalId, decision: request.decision, message: request.message };
        this.slots.get(this.machine.cliGen)?.run((p) => p.answerApproval(answer));
        this.dispatch({ type: 'approval_answered', approvalId: request.approvalId });
        this.link.send({ type: 'accepted', inReplyTo: request.approvalId });
        return;
      }
      case 'workspace_sync':
        // A person changed the durable copy; the agent sees it on its next tool call.
        void this.workspace.pull();
        return;
      case 'shutdown':
        this.o.log.info('hub asked to shut down', { reason: request.reason });
        this.dispatch({ type: 'shutdown', reason: 'hub_shutdown', graceful: false });
        return;
    }
  }

  /** Inputs are handled one at a time, in arrival order, even when an effect produces a new one. */
  private dispatch(input: MachineInput): void {
    this.quiet.input();
    this.inbox.push(input);
    if (this.processing) return;
    this.processing = true;
    try {
      for (let next = this.inbox.shift(); next; next = this.inbox.shift()) {
        for (const effect of this.machine.handle(next)) this.apply(effect);
      }
    } finally {
      this.processing = false;
    }
  }

  private apply(effect: MachineEffect): void {
    switch (effect.type) {
      case 'spawn_cli':
        return this.spawn(effect.gen);
      case 'open_cli_input':
        this.slots.get(effect.gen)?.open();
        return;
      case 'write_message':
        this.conversationStarted = true;
        this.toCli(effect.gen, (p) => {
          p.sendUserMessage(effect.message);
          this.hops?.stdinWritten();
        });
        return;
      case 'model_call_coming':
        // Behind whatever is written to the CLI before it: the call follows that.
        this.toCli(effect.gen, () => this.o.modelCallComing?.());
        return;
      case 'cli_interrupt':
        this.toCli(effect.gen, (p) => p.interrupt());
        return;
      case 'close_cli_input':
        this.toCli(effect.gen, (p) => p.closeInput());
        return;
      case 'kill_cli': {
        // The replaced CLI named a conversation of its own (pi at its handshake, a pooled CLI at its
        // warm-up); the restore, if any, names the session's.
        if (effect.discard) this.resumeHandle = undefined;
        const slot = this.slots.get(effect.gen);
        this.o.log.warn('killing the CLI process group', { gen: effect.gen, pid: slot?.pid });
        slot?.kill();
        return;
      }
      case 'reload_cli': {
        const slot = this.slots.get(effect.gen);
        if (slot === undefined) return;
        slot.holdForReload();
        const failed = (error: ErrorInfo) => this.failReload(effect.gen, slot, error);
        this.reloadSteps(effect.gen, slot.codec).then(
          (steps) =>
            slot.reloadWith(steps, () => failed(reloadError("the CLI refused to take on the session's conversation"))),
          (err: unknown) =>
            failed(err instanceof StepFailure ? err.info : reloadError(`cannot reload the CLI: ${messageOf(err)}`)),
        );
        return;
      }
      case 'emit':
        return this.emit(effect.event, effect.messageId);
      case 'accepted':
        this.link.send({ type: 'accepted', inReplyTo: effect.inReplyTo, ...(effect.duplicate && { duplicate: true }) });
        return;
      case 'reject':
        this.link.send({ type: 'reject', inReplyTo: effect.inReplyTo, error: effect.error });
        return;
      case 'set_timer': {
        clearTimeout(this.timers.get(effect.name));
        if (effect.name === 'shutdown_deadline') this.shutdownStartedAt ??= Date.now();
        const name = effect.name;
        this.timers.set(
          name,
          setTimeout(() => this.dispatch({ type: 'timer', name }), effect.ms),
        );
        return;
      }
      case 'clear_timer':
        clearTimeout(this.timers.get(effect.name));
        this.timers.delete(effect.name);
        return;
      case 'upload_transcript': {
        const final = effect.final;
        this.uploads = this.uploads
          .then(() => this.uploadTranscript(final))
          // After a turn always (its workspace.saved marks the turn's files durable); at the end only if something changed.
          .then(() => this.workspace.save({ announce: !final }))
          .then(() => {
            if (!final && this.o.config.compactHeap) this.quiet.arm();
          });
        return;
      }
      case 'status':
        if (this.prewarmed !== undefined && effect.status.cli !== 'starting') {
          this.prewarmed(effect.status.cli === 'running');
          this.prewarmed = undefined;
        } else if (this.prewarmed === undefined && effect.status.cli === 'stopped') this.prewarmLost?.();
        this.lastStatus = effect.status;
        this.link.send(effect.status);
        return;
      case 'log':
        this.o.log.log(effect.level, effect.msg, effect.fields);
        return;
      case 'finish':
        void this.finish(effect.reason, effect.exitCode, effect.error);
        return;
    }
  }

  private toCli(gen: number, op: (p: CliProcess) => void): void {
    const slot = this.slots.get(gen);
    if (slot === undefined) return;
    const failed = (err: unknown) => this.o.log.error('writing to the CLI failed', { gen, message: messageOf(err) });
    const write = () => {
      try {
        slot.run(op);
      } catch (err) {
        failed(err);
      }
    };
    // Nothing ahead of it: written now rather than some microtasks later, behind whatever they
    // run first (a pooled runner's first message waited ~1 ms for its hub link's dial to be set up).
    if (this.cliInputQueued === 0 && this.restored) return write();
    this.cliInputQueued += 1;
    this.cliInput = this.cliInput
      .then(() => this.restoring)
      .then(write, failed)
      .finally(() => {
        this.cliInputQueued -= 1;
      });
  }

  private spawn(gen: number): void {
    const { backend } = this.o.launch;
    // Built after any restore finished, so a restored conversation is resumed. The sandbox
    // refuses (the spawn fails, naming why) when the guard is missing.
    const spec = this.restoring.then(async () => {
      await this.cloneIfPending();
      const resume = await this.resumable();
      this.o.log.info('starting the CLI', { gen, resume: resume !== undefined });
      return cliSpawnSpec(this.o.launch, { ...(resume !== undefined && { resume }), approvals: this.approvals });
    });
    const codec = adapterFor(backend).createCodec();
    const hops = this.hops;
    const warmUp = this.warmUpNext ? warmUpFor(backend, codec) : [];
    this.warmUpNext = false;
    if (warmUp.length === 0) this.o.forwardModelCalls?.();
    const slot = CliSlot.start(
      gen,
      backend,
      codec,
      spec,
      {
        ...(hops !== undefined && { onStdoutChunk: () => hops.chunkRead() }),
        onStarted: (pid) => this.o.log.info('cli started', { gen, pid }),
        onWarmingUp: () => this.o.log.info('cli warming up', { gen }),
        onReady: (warmedUp) => {
          this.o.log.info('cli ready', { gen, ...(warmUp.length > 0 && { warmUp: warmedUp }) });
          this.o.forwardModelCalls?.();
          this.dispatch({ type: 'cli_ready', gen });
        },
        onOutput: () => this.dispatch({ type: 'cli_output', gen }),
        onEvent: (event) => {
          // Track the newest handle as it appears (claude names its session at init); a replaced
          // CLI's late lines must not bring back the handle its discard forgot.
          if (codec.resumeHandle !== undefined && gen === this.machine.cliGen) this.resumeHandle = codec.resumeHandle;
          hops?.eventParsed(event);
          this.dispatch({ type: 'cli_event', gen, event });
        },
        onExit: (exit) => {
          this.slots.delete(gen);
          this.o.log.info('cli exit', {
            gen,
            code: exit.code,
            signal: exit.signal,
            stderrHead: exit.stderrHead.slice(0, 500),
          });
          this.dispatch({ type: 'cli_exit', gen, exit });
        },
        onSpawnFailed: (error) => {
          this.slots.delete(gen);
          this.o.log.error('cli spawn failed', { gen, message: error.message });
          this.dispatch({ type: 'cli_spawn_failed', gen, error });
        },
      },
      warmUp,
    );
    this.slots.set(gen, slot);
  }

  /**
   * What a reload writes, once the welcome's restore is done: the same checks as a spawn after it
   * (the clone, then the workspace's CLI configuration), then the steps onto the restored
   * transcript or a new conversation. Rejects with what the spawn would have failed with.
   */
  private async reloadSteps(gen: number, codec: AgentCodec): Promise<WarmUpStep[]> {
    await this.restoring;
    const resume = await this.welcomeResume;
    await this.cloneIfPending();
    const refused = await projectConfigRefusal(this.o.config.backend, this.o.launch.dirs.workspace);
    if (refused !== null) throw new StepFailure(refused);
    this.o.log.info('reloading the CLI', { gen, resume: resume !== undefined });
    return piReloadSteps(codec, resume);
  }

  /** A reload that cannot be done ends the CLI as a failed start would: the next message starts one. */
  private failReload(gen: number, slot: CliSlot, error: ErrorInfo): void {
    if (this.slots.get(gen) !== slot) return;
    this.o.log.error('cli reload failed', { gen, message: error.message });
    slot.kill();
    this.dispatch({ type: 'cli_spawn_failed', gen, error });
  }

  /**
   * Clones the session's repository into the workspace and commits it as the baseline (docs/DESIGN.md
   * "Start from a repository"), once. A failure rejects with the clone's error, which ends the start
   * (and the turn waiting for it) with it; the next start tries again.
   */
  private cloneIfPending(): Promise<void> {
    const repository = this.repository;
    if (repository === undefined) return Promise.resolve();
    this.cloning ??= this.cloneAndCommit(repository).then((error) => {
      if (error === undefined) {
        this.repository = undefined;
        return;
      }
      this.cloning = undefined;
      this.o.log.error('repository clone failed', { message: error.message });
      this.emit({ type: 'error', ...error });
      throw new StepFailure(error);
    });
    return this.cloning;
  }

  /** The clone (a clone whose commit was refused is committed again, not cloned again), then its commit. */
  private async cloneAndCommit(repository: Repository): Promise<ErrorInfo | undefined> {
    if (this.cloned === undefined) {
      const c = this.o.config.clone;
      this.o.log.info('cloning the repository', { url: repository.url, ref: repository.ref });
      const cloned = await cloneRepository(repository, {
        dir: this.o.launch.dirs.workspace,
        allowLoopback: c.allowLoopback,
        timeoutMs: c.timeoutMs,
        path: process.env.PATH,
      });
      if (!cloned.ok) return cloned.error;
      this.cloned = cloned.value;
    }
    const saved = await this.workspace.saveBaseline(this.cloned);
    if (!saved.ok)
      return { ...saved.error, code: CLONE_ERROR_CODE, message: `saving the clone failed: ${saved.error.message}` };
    this.o.log.info('repository cloned and committed', { commit: this.cloned.commit });
    return undefined;
  }

  /**
   * The handle to resume, if its conversation file exists. A CLI killed before
   * its first flush left none; resuming a missing session fails every turn, so
   * the conversation starts over and the session is told why.
   */
  private async resumable(): Promise<string | undefined> {
    const file = transcriptFile(this.o.config.backend, this.resumeHandle, this.o.launch.dirs);
    if (!file) return undefined;
    if (
      await access(file.path).then(
        () => true,
        () => false,
      )
    )
      return this.resumeHandle;
    this.resumeHandle = undefined;
    // pi names its session file before writing it: a CLI that died before any message lost nothing.
    if (!this.conversationStarted) return undefined;
    this.o.log.warn('no transcript to resume; starting a new conversation', { resumeId: file.resumeId });
    this.emit({
      type: 'error',
      code: 'resume_unavailable',
      message: 'the previous conversation was not saved before the CLI stopped; continuing in a new conversation',
      retryable: false,
    });
    return undefined;
  }

  private emit(event: AgentEvent, messageId?: string): void {
    // The zod boundary between the codecs and the wire: a malformed event is a
    // runner bug, reported as one rather than sent on.
    const checked = AgentEventSchema.safeParse(event);
    const out: AgentEvent = checked.success
      ? checked.data
      : {
          type: 'error',
          code: 'runner_bad_event',
          message: `dropped a malformed ${event.type} event: ${checked.error.issues[0]?.message ?? ''}`,
          retryable: false,
        };
    const hops = this.hops?.buffered(event);
    const pushed = this.buffer.push('event', (seq) =>
      JSON.stringify(
        hops !== undefined
          ? { seq, event: out, messageId, hops }
          : messageId === undefined
            ? { seq, event: out }
            : { seq, event: out, messageId },
      ),
    );
    if (!pushed.ok) return this.overflow(pushed.error);
    this.link.notify();
  }

  private async uploadTranscript(final: boolean): Promise<void> {
    const file = transcriptFile(this.o.config.backend, this.resumeHandle, this.o.launch.dirs);
    // Only a live CLI may still be writing; a dead one's file is as complete as it gets.
    const writing = [...this.slots.values()].some((slot) => slot.running);
    if (!final && file && writing) await waitForQuietFile(file.path, TRANSCRIPT_SETTLE);
    const collected = await collectTranscript(this.o.config.backend, this.resumeHandle, this.o.launch.dirs);
    if (!collected.ok) {
      this.o.log.error('transcript upload failed', { code: collected.error.code, message: collected.error.message });
      this.emit({ type: 'error', ...collected.error });
      return;
    }
    const transcript = collected.value;
    if (!transcript || transcript.sha256 === this.lastUploadSha) return;
    const pushed = this.buffer.push('transcript', (seq) =>
      JSON.stringify(RunnerToHubSchema.parse({ type: 'transcript', seq, transcript })),
    );
    if (!pushed.ok) return this.overflow(pushed.error);
    this.lastUploadSha = transcript.sha256;
    this.o.log.info('transcript queued', { seq: pushed.value, bytes: transcript.bytes });
    this.link.notify();
  }

  /** docs/DESIGN.md "Runner memory" → "Between turns": never while a turn runs or the runner stops. */
  private compactHeap(at: 'start' | 'turn'): void {
    if (!this.o.config.compactHeap || this.machine.busy || this.machine.stopped) return;
    compactHeap(this.o.log, at);
  }

  private overflow(error: ErrorInfo): void {
    if (this.overflowReported) return;
    this.overflowReported = true;
    this.o.log.error('event buffer overflow: failing the session', {
      code: error.code,
      message: error.message,
      unacked: this.buffer.size,
    });
    this.dispatch({ type: 'fatal', reason: 'buffer_overflow', error, exitCode: ExitCode.bufferOverflow });
  }

  private async finish(reason: ByeReason, exitCode: number, error: ErrorInfo | undefined): Promise<void> {
    await this.uploads;
    const deadline =
      (this.shutdownStartedAt ?? Date.now()) + this.o.config.timings.shutdownDeadlineMs + DELIVERY_GRACE_MS;
    const drained = await this.link.waitDrained(Math.max(0, deadline - Date.now()));
    if (!drained)
      this.o.log.error('stopping with frames the hub never acked', {
        unacked: this.buffer.size,
        ackedSeq: this.buffer.ackedSeq,
        lastSeq: this.buffer.lastSeq,
      });
    await this.link.close({ type: 'bye', reason, lastSeq: this.buffer.lastSeq, ...(error && { error }) });
    for (const t of this.timers.values()) clearTimeout(t);
    this.killAllNow();
    const code = exitCode === ExitCode.ok && !drained ? ExitCode.failed : exitCode;
    this.o.log.info('runner stopped', { reason, exitCode: code });
    this.resolveExit(code);
  }
}

/** A reload that did not happen: retryable, since the next message starts a CLI that resumes. */
function reloadError(message: string): ErrorInfo {
  return { code: 'cli_reload_failed', message, retryable: true };
}
