import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, EventOf } from '@switchyard/protocol';
import type { ContractSession, HubEvent } from './contract-hub.ts';
import { until } from '../../../test/helpers/poll.ts';
import { groupMembers, startRunner, type RunnerProcess } from './runner-process.ts';

/** Settings that keep the suite fast; each test overrides what it exercises. */
export const FAST_ENV: Record<string, string> = {
  SWITCHYARD_CLI_RETRIES: '0',
  SWITCHYARD_CLI_RETRY_BASE_MS: '1',
  SWITCHYARD_INTERRUPT_DEADLINE: '5s',
  SWITCHYARD_STALL_TIMEOUT: '60s',
  SWITCHYARD_SHUTDOWN_DEADLINE: '10s',
  SWITCHYARD_SHUTDOWN_FINISH: '200ms',
  SWITCHYARD_LINK_BACKOFF_BASE: '50ms',
  SWITCHYARD_LINK_BACKOFF_MAX: '300ms',
  SWITCHYARD_IDLE_TIMEOUT: '5m',
  SWITCHYARD_LOG_LEVEL: 'info',
};

export interface Served {
  session: ContractSession;
  runner: RunnerProcess;
  workspace: string;
  stateDir: string;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Starts `switchyard-runner serve` for `session` with the fast settings plus `env`, from the bin unless `options.entry`. */
export function serveRunner(
  session: ContractSession,
  backend: Backend,
  modelUrl: string,
  env: Record<string, string> = {},
  options: { workspace?: string; stateDir?: string; entry?: string } = {},
): Served {
  const workspace = options.workspace ?? tempDir('sy-ws-');
  const stateDir = options.stateDir ?? tempDir('sy-state-');
  const runner = startRunner(
    ['serve'],
    {
      ...FAST_ENV,
      ...session.runnerEnv,
      SWITCHYARD_BACKEND: backend,
      SWITCHYARD_MODEL_URL: modelUrl,
      SWITCHYARD_WORKSPACE: workspace,
      SWITCHYARD_STATE_DIR: stateDir,
      ...env,
    },
    options.entry,
  );
  return { session, runner, workspace, stateDir };
}

/** A user text carrying an offline-model script. */
export function scripted(marker: string, script: Record<string, unknown>): string {
  return `${marker}\n#offline ${JSON.stringify(script)}`;
}

/** A reply that streams for about chunks × delayMs. */
export function slowText(marker: string, chunks: number, delayMs: number): string {
  const text = Array.from({ length: chunks }, (_, i) => `w${i}`).join(' ');
  return scripted(marker, { text, chunks, delayMs });
}

export function waitReady(session: ContractSession, timeoutMs = 30_000): Promise<true> {
  return session.waitFor(
    () => session.statuses().some((s) => s.state === 'ready' && s.cli === 'running'),
    'runner ready with a running CLI',
    timeoutMs,
  );
}

export function turnDones(session: ContractSession, messageId: string): Array<EventOf<'turn.done'>> {
  return session
    .events()
    .filter((e) => e.messageId === messageId && e.event.type === 'turn.done')
    .map((e) => e.event as EventOf<'turn.done'>);
}

export function waitTurnDone(
  session: ContractSession,
  messageId: string,
  timeoutMs = 30_000,
): Promise<EventOf<'turn.done'>> {
  return session.waitFor(() => turnDones(session, messageId)[0], `turn.done for ${messageId}`, timeoutMs);
}

export function waitEvent(
  session: ContractSession,
  pred: (e: HubEvent) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<HubEvent> {
  return session.waitFor(() => session.events().find(pred), what, timeoutMs);
}

export function textOf(session: ContractSession, messageId: string): string {
  return session
    .events()
    .filter((e) => e.messageId === messageId && e.event.type === 'text.delta')
    .map((e) => (e.event as EventOf<'text.delta'>).text)
    .join('');
}

/** SIGTERM, then the exit; SIGKILL if it overstays (the test then fails on the exit code). */
export async function stopRunner(
  runner: RunnerProcess,
  timeoutMs = 20_000,
): Promise<{ code: number | null; signal: string | null }> {
  runner.kill('SIGTERM');
  const timer = setTimeout(() => runner.kill('SIGKILL'), timeoutMs);
  const exit = await runner.exited;
  clearTimeout(timer);
  return exit;
}

/** The runner's exit, or a failure naming `what` if it takes longer than `timeoutMs`. */
export async function exitWithin(
  runner: RunnerProcess,
  timeoutMs: number,
  what = 'runner exit',
): Promise<{ code: number | null; signal: string | null; atMs: number }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: runner still running after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([runner.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits (bounded) until no live process is left in group `pgid`. Polls /proc:
 * the death of a process that is not the test's child raises no event.
 */
export async function waitGroupGone(pgid: number, timeoutMs = 10_000): Promise<boolean> {
  return until(`group ${pgid} to be gone`, () => groupMembers(pgid).length === 0, timeoutMs).then(
    () => true,
    () => false,
  );
}
