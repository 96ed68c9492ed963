import type { ErrorInfo } from '@switchyard/protocol';

/** Errors are values: the same `{code, message, retryable}` shape the wire carries. */
export type RunnerError = ErrorInfo;

export function runnerError(code: string, message: string, retryable = false): RunnerError {
  return { code, message, retryable };
}

/**
 * A start step that failed with its own error value (e.g. the repository clone), thrown through a
 * promise chain that only carries errors: whoever catches it reports `info` as it is.
 */
export class StepFailure extends Error {
  readonly info: RunnerError;
  constructor(info: RunnerError) {
    super(info.message);
    this.info = info;
  }
}

export type Result<T, E = RunnerError> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const fail = <E = RunnerError>(error: E): Result<never, E> => ({ ok: false, error });

/** Process exit codes of `switchyard-runner` (docs/DESIGN.md "Runner"). */
export const ExitCode = {
  ok: 0,
  /** once: the prompt failed; serve: stopped without delivering everything to the hub. */
  failed: 1,
  /** Bad arguments or environment. */
  usage: 2,
  /** The hub refused this runner for good (auth, superseded, session gone, protocol). */
  hubRejected: 3,
  /** The event buffer overflowed while the hub link was down. */
  bufferOverflow: 4,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
