import type { CliExit } from './adapter.ts';
import type { AgentEvent, ErrorInfo } from './events.ts';
import { head, isObj, type Obj } from './json-fields.ts';

/**
 * Turn bookkeeping shared by both codecs: exactly one turn.done per accepted
 * user message (invariant 1), and no silent empty success (invariant 6).
 */
export class TurnTracker {
  turnOpen = false;
  interruptRequested = false;
  sawEvents = false;
  /**
   * A provider error that retrying cannot fix, seen while the CLI was about to
   * retry it: the codec has asked the CLI to stop, and the turn ends with this
   * error however the CLI then reports the stop.
   */
  stoppedFor: ErrorInfo | undefined;
  private input: string[] = [];

  open(): void {
    this.turnOpen = true;
    this.interruptRequested = false;
    this.stoppedFor = undefined;
  }

  /**
   * Ends the CLI's retrying: `line` is the CLI's own stop command. The first
   * error is the one reported; `once` sends the line only the first time
   * (claude's interrupt ends the whole turn; pi's abort_retry only the wait in progress).
   */
  stopRetrying(error: ErrorInfo, line: string, once = true): void {
    if (!this.turnOpen) return;
    if (this.stoppedFor && once) return;
    this.stoppedFor ??= error;
    this.input.push(line);
  }

  /** A line the CLI needs whatever the turn's state (an answer to its own request). */
  queueInput(line: string): void {
    this.input.push(line);
  }

  takeInput(): string[] {
    if (this.input.length === 0) return [];
    const lines = this.input;
    this.input = [];
    return lines;
  }

  /** Returns [] when no turn is open, so a late result can never double-close. */
  close(done: Omit<Extract<AgentEvent, { type: 'turn.done' }>, 'type'>): AgentEvent[] {
    if (!this.turnOpen) return [];
    this.turnOpen = false;
    const interrupted = this.interruptRequested;
    this.interruptRequested = false;
    const stoppedFor = this.stoppedFor;
    this.stoppedFor = undefined;
    if (interrupted && done.stopReason === 'error') {
      const { error: _dropped, ...rest } = done;
      return [{ type: 'turn.done', ...rest, stopReason: 'interrupted' }];
    }
    // The CLI reports the stop the codec asked for as its own interruption or failure.
    if (
      stoppedFor &&
      (done.stopReason === 'error' || done.stopReason === 'interrupted' || done.stopReason === 'unknown')
    ) {
      return [{ type: 'turn.done', ...done, stopReason: 'error', error: stoppedFor }];
    }
    return [{ type: 'turn.done', ...done }];
  }

  /** One stdout record: JSON objects go to `handle`; anything else is a cli_bad_line error (invariant 4). */
  parseLine(line: string, handle: (msg: Obj) => AgentEvent[]): AgentEvent[] {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return this.badLine(line);
    }
    if (!isObj(msg)) return this.badLine(line);
    this.sawEvents = true;
    return handle(msg);
  }

  private badLine(line: string): AgentEvent[] {
    return [
      {
        type: 'error',
        code: 'cli_bad_line',
        message: `CLI wrote a line that is not JSON: ${head(line, 200)}`,
        retryable: false,
      },
    ];
  }

  end(exit: CliExit): AgentEvent[] {
    const stderrHead = head(exit.stderrHead);
    const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
    if (this.turnOpen) {
      const error: ErrorInfo = this.stoppedFor ?? {
        code: this.interruptRequested ? 'interrupted' : 'cli_exited',
        message: stderrHead ? `CLI ${how}: ${stderrHead}` : `CLI ${how} mid-turn`,
        retryable: true,
      };
      return this.close({ stopReason: 'error', error });
    }
    if (exit.code === 0 && !this.sawEvents && stderrHead) {
      return [{ type: 'error', code: 'cli_no_output', message: stderrHead, retryable: false }];
    }
    if (exit.code !== 0 && !this.interruptRequested && exit.signal !== 'SIGTERM') {
      return [
        {
          type: 'error',
          code: 'cli_exited',
          message: stderrHead ? `CLI ${how}: ${stderrHead}` : `CLI ${how}`,
          retryable: true,
        },
      ];
    }
    return [];
  }
}
