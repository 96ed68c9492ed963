// What a turn reports when it ends other than by the CLI's own turn.done: the CLI exiting, the
// stall watchdog, a start timeout, a fatal error, an interrupt. Pure; the machine (turn-machine.ts)
// decides when, these say what.
import type { CliExit, ErrorInfo, EventOf } from '@switchyard/protocol';
import type { Ending, MachineTimings, TurnDone } from './turn-types.ts';

/**
 * The turn.done a turn reports. The runner knows why it ended a turn early; the CLI's own report
 * does not, so an early end replaces the CLI's outcome with the runner's reason.
 */
export function reportedDone(
  done: TurnDone,
  ending: Ending | undefined,
  t: Pick<MachineTimings, 'stallMs' | 'cliStartMs'>,
  fatalError: ErrorInfo | undefined,
): TurnDone {
  const { error: _cliError, ...rest } = done;
  switch (ending) {
    case 'stall':
      return { ...rest, stopReason: 'error', error: stalledError(t.stallMs) };
    case 'start_timeout':
      return {
        ...rest,
        stopReason: 'error',
        error: { code: 'cli_start_timeout', message: startTimeoutError(t.cliStartMs).message, retryable: true },
      };
    case 'fatal':
      return {
        ...rest,
        stopReason: 'error',
        error: fatalError ?? { code: 'fatal', message: 'the runner failed', retryable: true },
      };
    case 'interrupt':
    case 'shutdown':
      // A turn that completed while the interrupt was on its way keeps its real outcome.
      return done.stopReason === 'error' || done.stopReason === 'unknown'
        ? { ...rest, stopReason: 'interrupted' }
        : done;
    default:
      return done;
  }
}

export function exitError(exit: CliExit): ErrorInfo {
  const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
  const head = exit.stderrHead.trim().split('\n', 1)[0]?.slice(0, 300) ?? '';
  return { code: 'cli_exited', message: head ? `CLI ${how}: ${head}` : `CLI ${how} mid-turn`, retryable: true };
}

function stalledError(stallMs: number): ErrorInfo {
  return {
    code: 'cli_stalled',
    message: `no output from the CLI for ${formatMs(stallMs)}; the turn was stopped`,
    retryable: true,
  };
}

export function startTimeoutError(ms: number): EventOf<'error'> {
  return {
    type: 'error',
    code: 'cli_start_timeout',
    message: `the CLI did not become ready within ${formatMs(ms)}`,
    retryable: true,
  };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
