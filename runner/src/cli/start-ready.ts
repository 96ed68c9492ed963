// Start a CLI and wait until it reads its stdin: the readiness handshake (readiness.ts), which for
// claude is also what registers its guard's hooks. For the commands that drive one CLI straight
// (probe, once, the guard canary); serve's CliSlot holds the handshake until the guard's
// self-test passed and interleaves it with a warm-up.
import type { AgentCodec, AgentEvent, Backend, CliExit } from '@switchyard/protocol';
import { messageOf } from '../errors.ts';
import { CliProcess, type CliProcessHandlers } from './cli-process.ts';
import { readinessFor } from './readiness.ts';
import type { PreparedSpawn } from './spawn.ts';

/** Started and ready, or why not; a CLI that is not ready is killed and awaited (its exit). */
export type StartReady = { ok: true; proc: CliProcess } | { ok: false; problem: string; exit?: CliExit | undefined };

export async function startReady(
  backend: Backend,
  spec: PreparedSpawn,
  codec: AgentCodec,
  handlers: CliProcessHandlers,
  timeoutMs: number,
): Promise<StartReady> {
  const readiness = readinessFor(backend, spec);
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  let firstError: string | undefined;
  let proc: CliProcess;
  try {
    proc = await CliProcess.start(spec, codec, {
      ...handlers,
      onEvent: (e: AgentEvent) => {
        if (e.type === 'error') firstError ??= e.message;
        if (readiness.isReady(undefined, e)) ready();
        handlers.onEvent(e);
      },
      onLine: (direction, line) => {
        if (direction === 'out' && readiness.isReady(line, undefined)) ready();
        handlers.onLine?.(direction, line);
      },
    });
  } catch (err) {
    return { ok: false, problem: `cannot start the CLI: ${messageOf(err)}` };
  }
  proc.handshake(readiness);
  const outcome = await proc.firstOf(isReady, timeoutMs);
  if (outcome === 'done') return { ok: true, proc };
  proc.closeInput();
  proc.kill('SIGKILL');
  const exit = await proc.exited;
  if (outcome === 'timeout')
    return { ok: false, problem: `the CLI did not answer its readiness handshake within ${timeoutMs / 1000} s`, exit };
  const stderr = exit.stderrHead.trim().split('\n', 1)[0] ?? '';
  const why = stderr || firstError;
  return { ok: false, problem: `the CLI exited during startup${why ? `: ${why}` : ''}`, exit };
}
