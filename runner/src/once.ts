import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  adapterFor,
  type AgentCodec,
  type AgentEvent,
  type Backend,
  type ErrorInfo,
  type EventOf,
  type StopReason,
  type Usage,
} from '@switchyard/protocol';
import { sandboxSetup } from './capabilities.ts';
import type { CliProcess } from './cli/cli-process.ts';
import { locateCli } from './cli/locate.ts';
import { type CliLaunch, cliSpawnSpec, makeCliDirs, type PreparedSpawn } from './cli/spawn.ts';
import { startReady } from './cli/start-ready.ts';
import type { CommonConfig } from './config.ts';
import { messageOf, runnerError } from './errors.ts';
import { startModelAccess } from './sandbox/model-proxy.ts';
import { SandboxError } from './sandbox/sandbox.ts';

export interface OnceOptions {
  backend: Backend;
  prompt: string;
  workspace: string;
  timeoutMs: number;
  config: CommonConfig;
  baseEnv: Record<string, string | undefined>;
}

/** The JSON `once` prints. `ok` only for a turn that ended normally with some text. */
export interface OnceResult {
  ok: boolean;
  text: string;
  stopReason: StopReason | null;
  usage?: Usage;
  costUsd?: number;
  error?: ErrorInfo;
}

/** After the answer, how long the CLI may take to exit on its own before its group is killed. */
const EXIT_GRACE_MS = 5000;
/** After an interrupt on timeout, how long before the group is killed. */
const INTERRUPT_GRACE_MS = 3000;

export async function runOnce(o: OnceOptions): Promise<OnceResult> {
  let executable;
  try {
    executable = o.config.executableOverride ?? locateCli(o.backend);
  } catch (err) {
    return failed(runnerError('cli_missing', messageOf(err)));
  }
  const sandbox = await sandboxSetup(o.baseEnv, [o.backend]);
  if (!sandbox.ok) return failed(sandbox.error);
  // The CLI talks to the credential proxy with a per-session key; the real key stays in this process.
  const model = await startModelAccess(o.config.model, sandbox.value.sandbox.mode);
  if (!model.ok) return failed(model.error);
  const stateDir = await mkdtemp(join(tmpdir(), 'switchyard-once-'));
  try {
    const launch: CliLaunch = {
      backend: o.backend,
      executable,
      dirs: await makeCliDirs(stateDir, resolve(o.workspace)),
      model: model.value,
      walls: sandbox.value,
      modelName: o.config.modelName,
      retry: o.config.retry,
      compileCache: o.config.cliCompileCache,
      baseEnv: o.baseEnv,
    };
    let spec;
    try {
      spec = await cliSpawnSpec(launch, { oneShot: true });
    } catch (err) {
      return failed(runnerError(err instanceof SandboxError ? err.code : 'sandbox_unavailable', messageOf(err)));
    }
    return await drive(spec, adapterFor(o.backend).createCodec(), o);
  } finally {
    await model.value.close();
    await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  }
}

async function drive(spec: PreparedSpawn, codec: AgentCodec, o: OnceOptions): Promise<OnceResult> {
  let done: EventOf<'turn.done'> | undefined;
  let lastAssistantText: string | undefined;
  let deltas = '';
  let firstError: ErrorInfo | undefined;
  let proc: CliProcess;
  let answered!: () => void;
  const turnDone = new Promise<void>((r) => (answered = r));
  const onEvent = (event: AgentEvent) => {
    if (event.type === 'text.delta') deltas += event.text;
    else if (event.type === 'message.assistant') {
      const text = event.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      if (text) lastAssistantText = text;
    } else if (event.type === 'error')
      firstError ??= { code: event.code, message: event.message, retryable: event.retryable };
    else if (event.type === 'turn.done') {
      done ??= event;
      answered();
    }
  };
  const started = await startReady(o.backend, spec, codec, { onEvent }, o.timeoutMs);
  if (!started.ok) return failed(runnerError('cli_spawn_failed', started.problem));
  proc = started.proc;
  let timedOut = false;
  const timeout = setTimeout(() => {
    timedOut = true;
    proc.interrupt();
    setTimeout(() => proc.kill('SIGKILL'), INTERRUPT_GRACE_MS).unref();
  }, o.timeoutMs);
  proc.sendUserMessage({ text: o.prompt });
  await Promise.race([turnDone, proc.exited]);
  clearTimeout(timeout);
  proc.closeInput();
  const killer = setTimeout(() => proc.kill('SIGKILL'), EXIT_GRACE_MS);
  const exit = await proc.exited;
  clearTimeout(killer);
  // Whatever the CLI left behind in its group goes with it.
  proc.kill('SIGKILL');

  const stderrFirst = exit.stderrHead.trim().split('\n', 1)[0]?.slice(0, 300) ?? '';
  const text = lastAssistantText ?? deltas;
  const extras = {
    ...(done?.usage !== undefined && { usage: done.usage }),
    ...(done?.costUsd !== undefined && { costUsd: done.costUsd }),
  };
  if (!done) {
    // No silent empty success: a CLI that said nothing fails with what it wrote to stderr.
    const error =
      firstError ??
      runnerError('cli_no_answer', stderrFirst || `the CLI exited (${exit.signal ?? exit.code}) without answering`);
    return { ok: false, text, stopReason: null, error };
  }
  if (timedOut) {
    return {
      ok: false,
      text,
      stopReason: done.stopReason,
      ...extras,
      error: runnerError('timeout', `no answer within ${o.timeoutMs} ms`, true),
    };
  }
  if (done.stopReason !== 'end_turn' && done.stopReason !== 'max_tokens') {
    const error =
      done.error ??
      runnerError(done.stopReason, `the turn ended with ${done.stopReason}${stderrFirst ? `: ${stderrFirst}` : ''}`);
    return { ok: false, text, stopReason: done.stopReason, ...extras, error };
  }
  if (!text.trim()) {
    return {
      ok: false,
      text,
      stopReason: done.stopReason,
      ...extras,
      error: runnerError('empty_answer', stderrFirst || 'the CLI answered with no text'),
    };
  }
  return { ok: true, text, stopReason: done.stopReason, ...extras };
}

function failed(error: ErrorInfo): OnceResult {
  return { ok: false, text: '', stopReason: null, error };
}
