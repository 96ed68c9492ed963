import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adapterFor,
  type AgentCodec,
  type AgentEvent,
  type Backend,
  type SpawnOptions,
  type ToolCheck,
} from '@switchyard/protocol';
import { CliProcess, locateCli, startReady } from '@switchyard/runner/cli';

export interface Harness {
  backend: Backend;
  proc: CliProcess;
  codec: AgentCodec;
  events: AgentEvent[];
  /** stdout records exactly as the CLI wrote them. */
  stdout: string[];
  dirs: { root: string; workspace: string; home: string; config: string };
  waitFor(pred: (e: AgentEvent, all: AgentEvent[]) => boolean, timeoutMs?: number): Promise<AgentEvent>;
  /** Waits for the n-th turn.done (1-based) and returns the events of that turn. */
  turn(n: number, timeoutMs?: number): Promise<AgentEvent[]>;
  close(): Promise<void>;
}

/**
 * Spawns the pinned real CLI through the adapter's spawn spec, recording every event. With
 * `checkTool`, claude's guard hooks are registered and answered with it (`guard: 'runner'`).
 */
export async function startCli(
  backend: Backend,
  modelUrl: string,
  opts: Partial<SpawnOptions> = {},
  checkTool?: ToolCheck,
): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), `sy-${backend}-`));
  const dirs = { root, workspace: join(root, 'ws'), home: join(root, 'home'), config: join(root, 'cfg') };
  for (const d of [dirs.workspace, dirs.home, dirs.config]) mkdirSync(d, { recursive: true });
  const adapter = adapterFor(backend);
  const spec = adapter.spawnSpec({
    executable: locateCli(backend),
    workspace: dirs.workspace,
    home: dirs.home,
    configDir: dirs.config,
    modelBaseUrl: modelUrl,
    modelApiKey: 'offline-dummy-key',
    baseEnv: process.env,
    retry: { maxRetries: 1, baseDelayMs: 1 },
    ...opts,
  });
  const codec = adapter.createCodec();
  const events: AgentEvent[] = [];
  const stdout: string[] = [];
  const waiters = new Set<() => void>();
  const handlers = {
    onEvent: (e: AgentEvent) => {
      events.push(e);
      for (const w of waiters) w();
    },
    onLine: (dir: 'in' | 'out', line: string) => {
      if (dir === 'out') stdout.push(line);
    },
  };
  const prepared = { ...spec, ...(checkTool !== undefined && { checkTool }) };
  let proc: CliProcess;
  if (spec.toolHooks !== undefined) {
    // A guarded claude's hooks come with its handshake, and count from its answer on.
    const started = await startReady(backend, prepared, codec, handlers, 30_000);
    if (!started.ok) throw new Error(`${backend}: ${started.problem}`);
    proc = started.proc;
  } else {
    // Unguarded, the CLI gets no handshake here: the benches that use this harness time the bare CLI.
    proc = await CliProcess.start(prepared, codec, handlers);
  }
  proc.exited.then(() => {
    for (const w of waiters) w();
  });

  const waitFor: Harness['waitFor'] = (pred, timeoutMs = 30_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const hit = events.find((e) => pred(e, events));
        if (hit) {
          finish();
          resolve(hit);
        } else if (!proc.running) {
          finish();
          reject(
            new Error(`CLI exited before the awaited event; events: ${JSON.stringify(events.map((e) => e.type))}`),
          );
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out; events so far: ${JSON.stringify(events).slice(0, 2000)}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  const turn: Harness['turn'] = async (n, timeoutMs) => {
    await waitFor((_, all) => all.filter((e) => e.type === 'turn.done').length >= n, timeoutMs);
    const doneIdx = events.flatMap((e, i) => (e.type === 'turn.done' ? [i] : []));
    const start = n === 1 ? 0 : (doneIdx[n - 2] ?? -1) + 1;
    return events.slice(start, (doneIdx[n - 1] ?? events.length - 1) + 1);
  };

  const close = async () => {
    proc.closeInput();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await proc.exited;
    clearTimeout(timer);
    // The CLI's whole process group must be gone: no orphans left behind.
    assertGroupGone(proc.pid);
    rmSync(root, { recursive: true, force: true });
  };

  return { backend, proc, codec, events, stdout, dirs, waitFor, turn, close };
}

export function assertGroupGone(pgid: number): void {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return;
    throw err;
  }
  process.kill(-pgid, 'SIGKILL');
  throw new Error(`process group ${pgid} still had live processes`);
}

export function textOf(events: AgentEvent[], type: 'text.delta' | 'thinking.delta' = 'text.delta'): string {
  return events.flatMap((e) => (e.type === type ? [e.text] : [])).join('');
}

export function count(events: AgentEvent[], type: AgentEvent['type']): number {
  return events.filter((e) => e.type === type).length;
}
