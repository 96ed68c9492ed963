// The serve-mode state machine: turns, interrupts with escalation, the stall
// watchdog, CLI crashes, idle exit, max lifetime and graceful shutdown. It
// does no I/O and reads no clock: inputs in, effects out (timers are
// effects too), so every rule is unit-tested without processes or sockets.
// session-runner.ts carries the effects out. Its inputs, effects and timings
// are turn-types.ts; what an early-ended turn reports is turn-outcomes.ts.
//
// Over 400 lines on purpose: the rules left here are one class because they
// all read and write the same few fields (phase, CLI generation and state,
// the running turn, the stop), and each rule is a few lines that only make
// sense next to the ones it interacts with (an interrupt, its deadline, the
// kill, the exit that closes the turn).
import type { AgentEvent, ByeReason, CliExit, ErrorInfo, RunnerStatus, UserMessage } from '@switchyard/protocol';
import { exitError, reportedDone, startTimeoutError } from './turn-outcomes.ts';
import { WELCOME_RESTORE_LOG } from './welcome-rule.ts';
import {
  ALL_TIMERS,
  type Ending,
  type GuardState,
  type MachineEffect,
  type MachineInput,
  type MachineTimings,
  type TimerName,
  type TurnDone,
} from './turn-types.ts';

export type { GuardState, MachineEffect, MachineInput, MachineTimings, TimerName } from './turn-types.ts';

interface Turn {
  messageId: string;
  /** Why the runner is ending this turn early; decides the turn.done it reports. */
  ending?: Ending;
  /** Tools whose input is complete and whose result has not come back: they may run silently. */
  runningTools: Set<string>;
  /** Approvals the CLI waits on: a person may take minutes, so the stall watchdog is off meanwhile. */
  waiting: Set<string>;
}

type CliState = 'none' | 'starting' | 'ready' | 'stopping';

interface Stop {
  reason: ByeReason;
  exitCode: number;
  error?: ErrorInfo;
}

const RECENT_IDS = 256;

export class TurnMachine {
  private phase: 'starting' | 'running' | 'stopping' | 'stopped' = 'starting';
  private cli: { gen: number; state: CliState } = { gen: 0, state: 'none' };
  private turn: Turn | undefined;
  /**
   * The `session.init` of a CLI started before the welcome, held until the welcome says whether
   * that CLI's conversation is the session's: a reloaded or replaced one names a conversation the
   * session never has (the warm-up's), and its successor announces its own.
   */
  private earlyInit: AgentEvent | undefined;
  private stop: Stop | undefined;
  private fatalError: ErrorInfo | undefined;
  private readonly recent: string[] = [];
  private lastStatus = '';
  private fx: MachineEffect[] = [];
  private readonly t: MachineTimings;
  private guard: GuardState;

  /** guard: the self-test's state when the runner is built (docs/DESIGN.md "The guard"). */
  constructor(timings: MachineTimings, guard: GuardState = 'passed') {
    this.t = timings;
    this.guard = guard;
  }

  get busy(): boolean {
    return this.turn !== undefined;
  }
  get cliGen(): number {
    return this.cli.gen;
  }
  get stopped(): boolean {
    return this.phase === 'stopped';
  }
  /** The CLI as a hello reports it: one the welcome will start is starting already. */
  get cliAtHello(): RunnerStatus['cli'] {
    return this.phase === 'starting' && this.cli.state === 'none' ? 'starting' : this.cliStatus;
  }

  handle(input: MachineInput): MachineEffect[] {
    this.fx = [];
    if (this.phase !== 'stopped') this.dispatch(input);
    this.pushStatus();
    const out = this.fx;
    this.fx = [];
    return out;
  }

  private dispatch(input: MachineInput): void {
    switch (input.type) {
      case 'start':
        this.setTimer('idle', this.t.idleMs);
        this.setTimer('max_lifetime', this.t.maxLifetimeMs);
        return;
      case 'prewarm':
        // A pooled runner, or one launched for a fresh session, starts its CLI before the welcome
        // (docs/DESIGN.md "Warm runner pool", "Runner behaviour (serve)").
        if (this.phase === 'starting' && this.cli.state === 'none') this.spawnCli();
        return;
      case 'linked':
        if (this.phase !== 'starting') return;
        this.phase = 'running';
        if (input.restore === 'reload' && (this.cli.state === 'starting' || this.cli.state === 'ready')) {
          // It has seen no message (none is taken before the welcome): it takes on the transcript
          // and the files now, and is ready again once it has.
          this.fx.push({ type: 'log', level: 'info', msg: WELCOME_RESTORE_LOG.reload });
          this.fx.push({ type: 'reload_cli', gen: this.cli.gen });
          this.cli.state = 'starting';
          this.setTimer('cli_start', this.t.cliStartMs);
        } else if (input.restore === 'replace' && (this.cli.state === 'starting' || this.cli.state === 'ready')) {
          // Started before the welcome, it cannot resume the transcript, run in the clone, ask for
          // approvals or have started with the files. It has seen no message (none is taken before
          // the welcome), so nothing is lost, and its own conversation is dropped with it.
          this.fx.push({ type: 'log', level: 'info', msg: WELCOME_RESTORE_LOG.replace });
          this.fx.push({ type: 'kill_cli', gen: this.cli.gen, discard: true });
          this.cli.state = 'none';
        } else if (this.earlyInit !== undefined && this.cli.state !== 'none') this.emit(this.earlyInit);
        this.earlyInit = undefined;
        if (this.cli.state === 'none') this.spawnCli();
        // A prewarmed CLI that is already up: idle time counts from now, as after any CLI start.
        else if (this.cli.state === 'ready' && !this.turn) this.setTimer('idle', this.t.idleMs);
        return;
      case 'user_message':
        return this.userMessage(input.messageId, input.message);
      case 'interrupt':
        return this.interrupt(input.requestId);
      case 'approval_answered':
        if (this.turn?.waiting.delete(input.approvalId) && !this.turn.ending && this.cli.state === 'ready') {
          this.armStall();
          // Approved, the tool runs first (often for milliseconds); refused, the CLI calls at once.
          if (this.turn.waiting.size === 0) this.fx.push({ type: 'model_call_coming', gen: this.cli.gen });
        }
        return;
      case 'guard':
        return this.guardResult(input.ok);
      case 'cli_ready':
        // A CLI is ready when it can take a message: never before the guard passed its self-test.
        if (input.gen !== this.cli.gen || this.cli.state !== 'starting' || this.guard !== 'passed') return;
        this.cli.state = 'ready';
        this.clearTimer('cli_start');
        if (this.turn && !this.turn.ending) this.armStall();
        // Idle time counts from when a message could first be taken, not from process start.
        else if (!this.turn && this.phase === 'running') this.setTimer('idle', this.t.idleMs);
        return;
      case 'cli_output':
        if (input.gen === this.cli.gen && this.turn && !this.turn.ending && this.cli.state === 'ready') this.armStall();
        return;
      case 'cli_event':
        return this.cliEvent(input.gen, input.event);
      case 'cli_exit':
        return this.cliExit(input.gen, input.exit);
      case 'cli_spawn_failed':
        if (input.gen !== this.cli.gen || this.cli.state === 'none') return;
        this.cli.state = 'none';
        this.clearTimer('cli_start');
        if (this.turn) this.closeTurn({ type: 'turn.done', stopReason: 'error', error: input.error });
        else this.emit({ type: 'error', ...input.error });
        this.continueStopping();
        return;
      case 'timer':
        return this.timer(input.name);
      case 'shutdown':
        return this.shutdown(input.reason, input.graceful);
      case 'fatal':
        return this.fatal(input.reason, input.error, input.exitCode);
    }
  }

  private userMessage(messageId: string, message: UserMessage): void {
    if (this.phase !== 'running') {
      const error = { code: 'stopping', message: 'the runner is shutting down', retryable: true };
      this.fx.push({ type: 'reject', inReplyTo: messageId, error });
      return;
    }
    if (this.recent.includes(messageId)) {
      // The hub resends a message whose reply it lost with the link; starting it twice would run the prompt twice.
      this.fx.push({ type: 'accepted', inReplyTo: messageId, duplicate: true });
      return;
    }
    if (this.turn) {
      const error = {
        code: 'busy',
        message: 'a turn is already running; wait for turn.done or interrupt it',
        retryable: true,
      };
      this.fx.push({ type: 'reject', inReplyTo: messageId, error });
      return;
    }
    // A CLI that is gone (crashed, killed by an interrupt) is replaced here, not earlier:
    // the runner restarts nothing on its own, the next message does.
    if (this.cli.state === 'none' || this.cli.state === 'stopping') this.spawnCli();
    this.turn = { messageId, runningTools: new Set(), waiting: new Set() };
    this.recent.push(messageId);
    if (this.recent.length > RECENT_IDS) this.recent.shift();
    this.clearTimer('idle');
    this.fx.push({ type: 'accepted', inReplyTo: messageId });
    this.fx.push({ type: 'write_message', gen: this.cli.gen, message });
    this.fx.push({ type: 'model_call_coming', gen: this.cli.gen });
    if (this.cli.state === 'ready') this.armStall();
  }

  private interrupt(requestId: string): void {
    if (!this.turn) {
      this.fx.push({
        type: 'reject',
        inReplyTo: requestId,
        error: { code: 'no_turn', message: 'no turn is running', retryable: false },
      });
      return;
    }
    if (!this.turn.ending) this.beginEnding('interrupt');
    this.fx.push({ type: 'accepted', inReplyTo: requestId });
  }

  /** The CLI's own interrupt first; the deadline timer escalates to killing its group. */
  private beginEnding(ending: Ending): void {
    if (!this.turn) return;
    this.turn.ending = ending;
    this.clearTimer('stall');
    this.clearTimer('shutdown_finish');
    this.fx.push({ type: 'cli_interrupt', gen: this.cli.gen });
    this.setTimer('interrupt_deadline', this.t.interruptDeadlineMs);
  }

  private cliEvent(gen: number, event: AgentEvent): void {
    // Late output of a CLI the runner already gave up on belongs to no turn.
    if (gen !== this.cli.gen || this.cli.state === 'none') return;
    if (event.type === 'session.init' && this.phase === 'starting') {
      this.earlyInit = event;
      return;
    }
    if (event.type === 'turn.done') {
      if (this.turn) this.closeTurn(event);
      return;
    }
    const turn = this.turn;
    if (turn) {
      if (event.type === 'approval.request') {
        turn.waiting.add(event.approvalId);
        this.clearTimer('stall');
      } else if (event.type === 'tool.end') turn.runningTools.add(event.toolId);
      else if (event.type === 'tool.result') {
        turn.runningTools.delete(event.toolId);
        // With every result back, the CLI sends them to the model.
        if (!turn.ending && turn.runningTools.size === 0 && turn.waiting.size === 0)
          this.fx.push({ type: 'model_call_coming', gen: this.cli.gen });
      } else if (event.type === 'turn.retry' && !turn.ending && this.cli.state === 'ready') {
        // The CLI waits out its own retry delay in silence; that is not a stall.
        this.setTimer('stall', (event.delayMs ?? 0) + this.t.stallMs);
      }
    }
    this.emit(event, turn?.messageId);
  }

  private cliExit(gen: number, exit: CliExit): void {
    if (gen !== this.cli.gen || this.cli.state === 'none') return;
    this.cli.state = 'none';
    this.clearTimer('cli_start');
    this.clearTimer('cli_stop');
    this.clearTimer('kill_deadline');
    this.fx.push({
      type: 'log',
      level: this.stop ? 'info' : 'warn',
      msg: 'cli exited',
      fields: { gen, code: exit.code, signal: exit.signal },
    });
    // The codec closes an open turn in end(); this is the backstop if it did not.
    if (this.turn) this.closeTurn({ type: 'turn.done', stopReason: 'error', error: exitError(exit) });
    this.continueStopping();
  }

  private timer(name: TimerName): void {
    const turn = this.turn;
    switch (name) {
      case 'stall':
        if (turn && !turn.ending) {
          this.fx.push({ type: 'log', level: 'warn', msg: 'cli stalled', fields: { messageId: turn.messageId } });
          this.beginEnding('stall');
        }
        return;
      case 'interrupt_deadline':
        if (!turn) return;
        this.fx.push({
          type: 'log',
          level: 'warn',
          msg: 'turn did not end after the CLI interrupt; killing the CLI group',
          fields: { messageId: turn.messageId },
        });
        this.killCli();
        return;
      case 'cli_start':
        if (this.cli.state !== 'starting') return;
        if (turn) turn.ending = 'start_timeout';
        else this.emit(startTimeoutError(this.t.cliStartMs));
        this.killCli();
        return;
      case 'cli_stop':
        if (this.cli.state !== 'none') this.killCli();
        return;
      case 'kill_deadline':
        // SIGKILL was sent but the exit never came (an escaped grandchild holding
        // the pipes, say). Stop waiting: the turn must still end.
        if (this.cli.state === 'none') return;
        this.fx.push({
          type: 'log',
          level: 'error',
          msg: 'cli did not exit after SIGKILL; abandoning it',
          fields: { gen: this.cli.gen },
        });
        this.cli.state = 'none';
        if (turn) {
          const error = { code: 'cli_unresponsive', message: 'the CLI did not exit after SIGKILL', retryable: true };
          this.closeTurn({ type: 'turn.done', stopReason: 'error', error });
        }
        this.continueStopping();
        return;
      case 'idle':
        // A CLI still starting could not have taken a message yet; its own start timeout bounds that wait.
        if (this.cli.state === 'starting' && !turn) {
          this.setTimer('idle', this.t.idleMs);
          return;
        }
        // Also before the hub was ever reached: a runner nobody talks to must not live forever.
        if ((this.phase === 'running' || this.phase === 'starting') && !turn) this.shutdown('idle', true);
        return;
      case 'max_lifetime':
        this.shutdown('max_lifetime', true);
        return;
      case 'shutdown_finish':
        if (turn && !turn.ending) this.beginEnding('shutdown');
        return;
      case 'shutdown_deadline':
        this.fx.push({ type: 'log', level: 'error', msg: 'shutdown deadline reached; stopping hard' });
        if (this.cli.state !== 'none') {
          this.fx.push({ type: 'kill_cli', gen: this.cli.gen });
          this.cli.state = 'none';
        }
        if (turn) {
          const error = {
            code: 'shutdown_deadline',
            message: 'the runner stopped before the turn ended',
            retryable: true,
          };
          this.closeTurn({ type: 'turn.done', stopReason: 'error', error });
        }
        this.finish();
        return;
    }
  }

  private shutdown(reason: ByeReason, graceful: boolean): void {
    if (this.phase === 'stopping' || this.phase === 'stopped') return;
    this.phase = 'stopping';
    this.stop = { reason, exitCode: 0 };
    this.fx.push({ type: 'log', level: 'info', msg: 'shutting down', fields: { reason } });
    this.clearTimer('idle');
    this.clearTimer('max_lifetime');
    this.setTimer('shutdown_deadline', this.t.shutdownDeadlineMs);
    const turn = this.turn;
    if (turn) {
      if (turn.ending) return;
      if (graceful && this.t.shutdownFinishMs > 0) this.setTimer('shutdown_finish', this.t.shutdownFinishMs);
      else this.beginEnding('shutdown');
      return;
    }
    this.continueStopping();
  }

  private fatal(reason: ByeReason, error: ErrorInfo, exitCode: number): void {
    if (this.phase === 'stopped') return;
    if (this.phase !== 'stopping') {
      this.clearTimer('idle');
      this.clearTimer('max_lifetime');
      this.setTimer('shutdown_deadline', this.t.shutdownDeadlineMs);
    }
    this.phase = 'stopping';
    this.stop = { reason, exitCode, error };
    this.fatalError = error;
    this.fx.push({
      type: 'log',
      level: 'error',
      msg: 'fatal',
      fields: { reason, code: error.code, message: error.message },
    });
    if (this.turn) this.turn.ending = 'fatal';
    if (this.cli.state !== 'none') this.killCli();
    else this.continueStopping();
  }

  private killCli(): void {
    this.clearTimer('stall');
    this.clearTimer('interrupt_deadline');
    this.clearTimer('cli_stop');
    this.clearTimer('cli_start');
    this.fx.push({ type: 'kill_cli', gen: this.cli.gen });
    this.cli.state = 'stopping';
    this.setTimer('kill_deadline', this.t.killGraceMs);
  }

  private spawnCli(): void {
    this.cli = { gen: this.cli.gen + 1, state: 'starting' };
    this.fx.push({ type: 'spawn_cli', gen: this.cli.gen });
    if (this.guard === 'passed') this.fx.push({ type: 'open_cli_input', gen: this.cli.gen });
    this.setTimer('cli_start', this.t.cliStartMs);
  }

  /**
   * The self-test finished while a CLI may already be starting (a fresh session's). Passed: its
   * input opens. Failed: it is killed unseen, as if it had never started — it has had no input, so
   * it made no tool call — and the runner goes on as one whose guard failed before any spawn.
   */
  private guardResult(ok: boolean): void {
    if (this.guard !== 'pending') return;
    this.guard = ok ? 'passed' : 'failed';
    if (this.cli.state === 'none') return;
    if (ok) {
      this.fx.push({ type: 'open_cli_input', gen: this.cli.gen });
      return;
    }
    this.fx.push({ type: 'log', level: 'error', msg: 'killing the CLI started before the guard failed its self-test' });
    this.fx.push({ type: 'kill_cli', gen: this.cli.gen });
    this.clearTimer('cli_start');
    this.cli.state = 'none';
    this.continueStopping();
  }

  /** The one place a turn ends: exactly one turn.done per accepted message. */
  private closeTurn(done: TurnDone): void {
    const turn = this.turn;
    if (!turn) return;
    this.turn = undefined;
    this.clearTimer('stall');
    this.clearTimer('interrupt_deadline');
    this.clearTimer('shutdown_finish');
    this.emit(reportedDone(done, turn.ending, this.t, this.fatalError), turn.messageId);
    this.fx.push({ type: 'upload_transcript', final: false });
    if (this.phase === 'running') this.setTimer('idle', this.t.idleMs);
    this.continueStopping();
  }

  /** While stopping: once no turn runs, stop the CLI; once it is gone, finish. */
  private continueStopping(): void {
    if (this.phase !== 'stopping' || this.turn) return;
    switch (this.cli.state) {
      case 'none':
        this.finish();
        return;
      case 'starting':
      case 'ready':
        // Closing stdin lets the CLI flush its transcript and exit on its own.
        this.fx.push({ type: 'close_cli_input', gen: this.cli.gen });
        this.cli.state = 'stopping';
        this.setTimer('cli_stop', this.t.cliStopGraceMs);
        return;
      case 'stopping':
        return;
    }
  }

  private finish(): void {
    if (this.phase === 'stopped') return;
    const stop = this.stop ?? { reason: 'fatal' as const, exitCode: 1 };
    this.phase = 'stopped';
    for (const name of ALL_TIMERS) this.clearTimer(name);
    this.fx.push({ type: 'upload_transcript', final: true });
    this.fx.push({
      type: 'finish',
      reason: stop.reason,
      exitCode: stop.exitCode,
      ...(stop.error && { error: stop.error }),
    });
  }

  private armStall(): void {
    if (this.turn !== undefined && this.turn.waiting.size > 0) return this.clearTimer('stall');
    const tools = this.turn?.runningTools.size ?? 0;
    this.setTimer('stall', tools > 0 ? this.t.toolStallMs : this.t.stallMs);
  }

  private emit(event: AgentEvent, messageId?: string): void {
    this.fx.push({ type: 'emit', event, ...(messageId !== undefined && { messageId }) });
  }

  private setTimer(name: TimerName, ms: number): void {
    this.fx.push({ type: 'set_timer', name, ms });
  }

  private clearTimer(name: TimerName): void {
    this.fx.push({ type: 'clear_timer', name });
  }

  private get cliStatus(): RunnerStatus['cli'] {
    return this.cli.state === 'none' ? 'stopped' : this.cli.state === 'starting' ? 'starting' : 'running';
  }

  private pushStatus(): void {
    const status: RunnerStatus = {
      type: 'status',
      state:
        this.phase === 'starting' ? 'starting' : this.phase === 'running' ? (this.turn ? 'busy' : 'ready') : 'stopping',
      cli: this.cliStatus,
      ...(this.stop && { reason: this.stop.reason }),
    };
    const key = JSON.stringify(status);
    if (key === this.lastStatus) return;
    this.lastStatus = key;
    this.fx.push({ type: 'status', status });
  }
}
