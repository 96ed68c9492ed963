// The turn machine's vocabulary (turn-machine.ts): what it is told (inputs), what it asks the
// runner to do (effects), its timers and the timings that drive them.
import type {
  AgentEvent,
  ByeReason,
  CliExit,
  ErrorInfo,
  EventOf,
  RunnerStatus,
  UserMessage,
} from '@switchyard/protocol';
import type { WelcomeRestore } from './welcome-rule.ts';

export interface MachineTimings {
  /** After the CLI's own interrupt, how long the turn may take to end before the group is killed. */
  interruptDeadlineMs: number;
  /** No CLI output for this long during a turn → the turn is stopped as `cli_stalled`. */
  stallMs: number;
  /** The same while a tool runs (tools may be silent for minutes). */
  toolStallMs: number;
  /** A spawned CLI must report ready within this. */
  cliStartMs: number;
  /** After SIGKILL, how long to wait for the CLI's exit before giving up on it. */
  killGraceMs: number;
  /** Exit after this long without a user message. */
  idleMs: number;
  maxLifetimeMs: number;
  /** On a graceful shutdown, how long a running turn may go on before it is interrupted. */
  shutdownFinishMs: number;
  /** From a shutdown request to `finish`, whatever happens (ECS stops a task 30 s after SIGTERM). */
  shutdownDeadlineMs: number;
  /** After closing the CLI's stdin at shutdown, how long it may take to exit before it is killed. */
  cliStopGraceMs: number;
}

/** The guard's self-test: still running (the CLI may start, but takes no input), passed, or failed. */
export type GuardState = 'pending' | 'passed' | 'failed';

export type TimerName =
  | 'stall'
  | 'interrupt_deadline'
  | 'kill_deadline'
  | 'cli_start'
  | 'cli_stop'
  | 'idle'
  | 'max_lifetime'
  | 'shutdown_finish'
  | 'shutdown_deadline';

export type MachineInput =
  | { type: 'start' }
  /**
   * The hub link is up for the first time and any transcript is being restored. `restore`: the
   * welcome brought what a CLI started before it (prewarm) did not start with (welcome-rule.ts);
   * that CLI is reloaded onto it (pi) or replaced. Absent: nothing to restore.
   */
  | { type: 'linked'; restore?: WelcomeRestore }
  /**
   * Start the CLI now, before the welcome: a pooled runner (no session yet) or a runner launched
   * for a session with nothing to restore (SWITCHYARD_FRESH_SESSION).
   */
  | { type: 'prewarm' }
  | { type: 'user_message'; messageId: string; message: UserMessage }
  | { type: 'interrupt'; requestId: string }
  /** The hub's answer to an approval reached the CLI (or the CLI no longer waited for it). */
  | { type: 'approval_answered'; approvalId: string }
  /**
   * The guard's self-test result, when it was still running at construction. Until it passed no
   * input reaches a CLI and none counts as ready; a failure kills a CLI already started.
   */
  | { type: 'guard'; ok: boolean }
  | { type: 'cli_ready'; gen: number }
  /** Any stdout line: the watchdog's heartbeat. */
  | { type: 'cli_output'; gen: number }
  | { type: 'cli_event'; gen: number; event: AgentEvent }
  | { type: 'cli_exit'; gen: number; exit: CliExit }
  | { type: 'cli_spawn_failed'; gen: number; error: ErrorInfo }
  | { type: 'timer'; name: TimerName }
  /** graceful: let a running turn finish for `shutdownFinishMs` before interrupting it. */
  | { type: 'shutdown'; reason: ByeReason; graceful: boolean }
  /** Stop at once: kill the CLI, deliver what can be delivered, exit with `exitCode`. */
  | { type: 'fatal'; reason: ByeReason; error: ErrorInfo; exitCode: number };

export type MachineEffect =
  | { type: 'spawn_cli'; gen: number }
  /** The CLI's stdin may be written (the readiness handshake first); never before the guard passed its self-test. */
  | { type: 'open_cli_input'; gen: number }
  | { type: 'write_message'; gen: number; message: UserMessage }
  /**
   * The CLI will call the model next, within its own few milliseconds: after a message, after the
   * answer to the last approval it waited on, after the result of the last tool that ran.
   */
  | { type: 'model_call_coming'; gen: number }
  | { type: 'cli_interrupt'; gen: number }
  | { type: 'close_cli_input'; gen: number }
  /**
   * SIGKILL to the CLI's whole process group. `discard`: its conversation was never the session's
   * (a CLI started before the welcome, replaced): the runner forgets its resume handle.
   */
  | { type: 'kill_cli'; gen: number; discard?: true }
  /**
   * The CLI started before the welcome takes on what it restored without a restart
   * (cli/reload.ts); it takes no input meanwhile and reports `cli_ready` again when done, or the
   * runner reports `cli_spawn_failed` (it is killed) when the reload cannot be done.
   */
  | { type: 'reload_cli'; gen: number }
  | { type: 'emit'; event: AgentEvent; messageId?: string }
  | { type: 'accepted'; inReplyTo: string; duplicate?: boolean }
  | { type: 'reject'; inReplyTo: string; error: ErrorInfo }
  | { type: 'set_timer'; name: TimerName; ms: number }
  | { type: 'clear_timer'; name: TimerName }
  /** final: the CLI has exited, so its file is complete; otherwise the CLI may still be flushing it. */
  | { type: 'upload_transcript'; final: boolean }
  | { type: 'status'; status: RunnerStatus }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; msg: string; fields?: Record<string, unknown> }
  /** Deliver what is buffered, say bye, exit. The machine is done. */
  | { type: 'finish'; reason: ByeReason; exitCode: number; error?: ErrorInfo };

export const ALL_TIMERS: TimerName[] = [
  'stall',
  'interrupt_deadline',
  'kill_deadline',
  'cli_start',
  'cli_stop',
  'idle',
  'max_lifetime',
  'shutdown_finish',
  'shutdown_deadline',
];

/** Why the runner is ending a turn early; decides the turn.done it reports (turn-outcomes.ts). */
export type Ending = 'interrupt' | 'stall' | 'shutdown' | 'start_timeout' | 'fatal';

export type TurnDone = EventOf<'turn.done'>;
