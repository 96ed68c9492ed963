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
   * (readiness.ts), and while a warm-up runs the CLI's input is the warm-up's and what it says is
   * hidden (a message written then would be answered unheard).
   */
  private holding = true;
  private held: Array<(p: CliProcess) => void> = [];
  /** Resolves once the spawn is over, whether the process started or not. */
  spawned: Promise<void> = Promise.resolve();

  private constructor(gen: number, codec: AgentCodec) {
    this.gen = gen;
    this.codec = codec;
  }

  static start(
    gen: number,
    backend: Backend,
    codec: AgentCodec,
    spec: Promise<PreparedSpawn>,
    h: CliSlotHandlers,
    warmUp: WarmUpStep[] = [],
  ): CliSlot {
    const slot = new CliSlot(gen, codec);
    // Made from the spec (claude's registers the guard's hooks), so known once the spawn starts.
    let readiness: Readiness | undefined;
    // The handshake, then the warm-up (cli/warm-up.ts); ready once the last step is answered.
    const handshake: WarmUpStep = {
      lines: () => [],
      answer: (line, event) => (readiness?.isReady(line, event) === true ? 'done' : undefined),
    };
    const steps = [handshake, ...warmUp];
    let step = 0;
    let refused = 0;
    const answered = (line: string | undefined, event: AgentEvent | undefined) => {
      const answer = slot.ready ? undefined : steps[step]?.answer(line, event);
      if (answer === undefined) return;
      if (answer === 'refused') refused += 1;
      step += 1;
      // Up with a message already waiting: a warm-up now would only delay its answer.
      const skip = step === 1 && slot.held.length > 0;
      const next = skip ? undefined : steps[step];
      if (next === undefined) {
        slot.ready = true;
        // Ready first (the model proxy forwards from then on), then what waited is written.
        h.onReady({ steps: step - 1, refused });
        slot.release();
        return;
      }
      if (step === 1) h.onWarmingUp?.();
      for (const l of next.lines()) slot.proc?.writeControl(l);
    };
    // What the CLI says during the warm-up is the runner's business only: the machine sees the
    // CLI's output up to the handshake and from the answer that makes it ready on.
    const heard = () => slot.ready || step === 0;
    slot.spawned = (async () => {
      let proc: CliProcess;
      try {
        const prepared = await spec;
        readiness = readinessFor(backend, prepared);
        proc = await CliProcess.start(prepared, codec, {
          ...(h.onStdoutChunk !== undefined && { onStdoutChunk: h.onStdoutChunk }),
          onLine: (direction, line) => {
            if (direction !== 'out') return;
            answered(line, undefined);
            if (heard()) h.onOutput();
          },
          onEvent: (event) => {
            answered(undefined, event);
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
      if (readiness !== undefined) p.handshake(readiness);
    });
    return slot;
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
