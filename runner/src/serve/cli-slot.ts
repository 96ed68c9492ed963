import type { AgentCodec, AgentEvent, Backend, CliExit, ErrorInfo } from '@switchyard/protocol';
import { CliProcess } from '../cli/cli-process.ts';
import { type Readiness, readinessFor } from '../cli/readiness.ts';
import type { PreparedSpawn } from '../cli/spawn.ts';
import type { WarmUpStep } from '../cli/warm-up.ts';
import { messageOf, StepFailure } from '../errors.ts';

export interface CliSlotHandlers {
  onStarted(pid: number): void;
  /** `steps`: warm-up steps taken (0: skipped), `refused`: those the CLI answered with an error (cli/warm-up.ts). */
  onReady(warmUp: { steps: number; refused: number }): void;
  /** The CLI answered its handshake and its warm-up begins. */
  onWarmingUp?(): void;
  /** Any stdout line. */
  onOutput(): void;
  /** A stdout chunk arrived (bench hop stamps only). */
  onStdoutChunk?(): void;
  onEvent(event: AgentEvent): void;
  onExit(exit: CliExit): void;
  onSpawnFailed(error: ErrorInfo): void;
}

/**
 * One CLI generation. The machine decides synchronously; spawning is async,
 * so writes and kills that arrive before the process exists are queued here
 * and applied, in order, once it does.
 */
export class CliSlot {
  readonly gen: number;
  readonly codec: AgentCodec;
  private proc: CliProcess | undefined;
  private pending: Array<(p: CliProcess) => void> = [];
  private killed = false;
  private ready = false;
  /** Nothing is written to the CLI (not even the readiness handshake) until open(). */
  private inputOpen = false;
  /**
   * Until the CLI is ready, what the machine writes waits here, in order, and goes to the CLI
   * then: before the handshake is answered claude's guard hooks may not be registered yet
   * (readiness.ts), while a warm-up runs the CLI's input is the warm-up's and what it says is
   * hidden (a message written then would be answered unheard), and while a reload runs the CLI
   * is taking on the session (pi runs RPC commands concurrently: a prompt would race it).
   */
  private holding = true;
  private held: Array<(p: CliProcess) => void> = [];
  /** Resolves once the spawn is over, whether the process started or not. */
  spawned: Promise<void> = Promise.resolve();
  private readonly h: CliSlotHandlers;
  /** Made from the spec (claude's registers the guard's hooks), so known once the spawn starts. */
  private readiness: Readiness | undefined;
  private handshakeAnswered = false;
  /** The step whose answer is awaited (the handshake first, then the warm-up's, then a reload's). */
  private current: WarmUpStep | undefined;
  /** Steps not begun yet. */
  private steps: WarmUpStep[] = [];
  private warmUp = { steps: 0, refused: 0 };
  /** A reload was asked for and its steps are still being prepared: not ready until they ran. */
  private reloadPending = false;
  /** The reload's steps; a refusal of one is called back, and the CLI stays not ready. */
  private reload: { steps: Set<WarmUpStep>; onRefused: () => void } | undefined;

  private constructor(gen: number, codec: AgentCodec, h: CliSlotHandlers) {
    this.gen = gen;
    this.codec = codec;
    this.h = h;
  }

  static start(
    gen: number,
    backend: Backend,
    codec: AgentCodec,
    spec: Promise<PreparedSpawn>,
    h: CliSlotHandlers,
    warmUp: WarmUpStep[] = [],
  ): CliSlot {
    const slot = new CliSlot(gen, codec, h);
    // The handshake, then the warm-up (cli/warm-up.ts); ready once the last step is answered.
    slot.current = {
      lines: () => [],
      answer: (line, event) => (slot.readiness?.isReady(line, event) === true ? 'done' : undefined),
    };
    slot.steps = [...warmUp];
    // What the CLI says during the warm-up is the runner's business only: the machine sees the
    // CLI's output up to the handshake and from the answer that makes it ready on.
    const heard = () => slot.ready || !slot.handshakeAnswered;
    slot.spawned = (async () => {
      let proc: CliProcess;
      try {
        const prepared = await spec;
        slot.readiness = readinessFor(backend, prepared);
        proc = await CliProcess.start(prepared, codec, {
          ...(h.onStdoutChunk !== undefined && { onStdoutChunk: h.onStdoutChunk }),
          onLine: (direction, line) => {
            if (direction !== 'out') return;
            slot.answered(line, undefined);
            if (heard()) h.onOutput();
          },
          onEvent: (event) => {
            slot.answered(undefined, event);
            if (heard()) h.onEvent(event);
          },
        });
      } catch (err) {
        h.onSpawnFailed(
          err instanceof StepFailure
            ? err.info
            : { code: 'cli_spawn_failed', message: `cannot start the CLI: ${messageOf(err)}`, retryable: false },
        );
        return;
      }
      slot.proc = proc;
      h.onStarted(proc.pid);
      void proc.exited.then((exit) => h.onExit(exit));
      if (slot.killed) proc.kill('SIGKILL');
      else slot.flush();
    })();
    // The handshake is the first input, so it waits for open() like every other.
    slot.pending.push((p) => {
      if (slot.readiness !== undefined) p.handshake(slot.readiness);
    });
    return slot;
  }

  /**
   * A reload is coming (cli/reload.ts): from now on nothing more reaches the CLI, and it is not
   * ready again, until `reloadWith`'s steps were answered. Called before any message can be
   * written, so none meets the CLI mid-reload.
   */
  holdForReload(): void {
    this.reloadPending = true;
    if (!this.ready) return;
    this.ready = false;
    this.holding = true;
  }

  /** The reload's steps, once known: they run after whatever step is under way. */
  reloadWith(steps: WarmUpStep[], onRefused: () => void): void {
    if (!this.reloadPending || this.killed) return;
    this.reloadPending = false;
    this.reload = { steps: new Set(steps), onRefused };
    this.steps.push(...steps);
    if (this.handshakeAnswered && this.current === undefined) this.next();
  }

  private answered(line: string | undefined, event: AgentEvent | undefined): void {
    const step = this.current;
    const answer = this.ready || step === undefined ? undefined : step.answer(line, event);
    if (step === undefined || answer === undefined) return;
    this.current = undefined;
    if (!this.handshakeAnswered) {
      this.handshakeAnswered = true;
      // Up with a message already waiting: a warm-up now would only delay its answer (a reload's
      // steps are never skipped).
      if (this.held.length > 0) this.steps = this.steps.filter((s) => this.reload?.steps.has(s) === true);
      if (this.steps.some((s) => this.reload?.steps.has(s) !== true)) this.h.onWarmingUp?.();
    } else if (this.reload?.steps.has(step) === true) {
      // A CLI that refused to take on the session must not take its messages either.
      if (answer === 'refused') return this.reload.onRefused();
    } else {
      this.warmUp.steps += 1;
      if (answer === 'refused') this.warmUp.refused += 1;
    }
    this.next();
  }

  /** Starts the next step, or, with none left, makes the CLI ready and writes what waited. */
  private next(): void {
    const step = this.steps.shift();
    if (step !== undefined) {
      this.current = step;
      for (const l of step.lines()) this.proc?.writeControl(l);
      return;
    }
    if (this.reloadPending) return;
    this.ready = true;
    // Ready first (the model proxy forwards from then on), then what waited is written.
    this.h.onReady(this.warmUp);
    this.release();
  }

  /** The guard passed its self-test: what was held is written now, in order, and the rest as it comes. */
  open(): void {
    this.inputOpen = true;
    this.flush();
  }

  private flush(): void {
    const proc = this.proc;
    if (proc === undefined || !this.inputOpen || this.killed) return;
    const ops = this.pending;
    this.pending = [];
    for (const op of ops) op(proc);
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get running(): boolean {
    return this.proc?.running ?? !this.killed;
  }

  run(op: (p: CliProcess) => void): void {
    if (this.killed) return;
    if (this.holding) this.held.push(op);
    else if (this.proc && this.inputOpen) op(this.proc);
    else this.pending.push(op);
  }

  private release(): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    for (const op of held) this.run(op);
  }

  /** SIGKILL to the whole process group, now or as soon as the process exists. */
  kill(): void {
    this.killed = true;
    this.pending = [];
    this.held = [];
    this.proc?.kill('SIGKILL');
  }
}
