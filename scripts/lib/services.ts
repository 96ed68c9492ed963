// Long-running child services for `npm start` (and the e2e tests that start the stack the same
// way): each one detached in its own process group, output split into lines, stopped with
// SIGTERM to the group and SIGKILL to every group seen below it after a grace period.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { descendants, killGroup, listProcs, liveInGroups, readProc } from '@switchyard/runner/host';

export type OutputSink = (service: string, stream: 'stdout' | 'stderr', line: string) => void;

export interface Service {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Every process group seen at or below the service (its own first). */
  groups: Set<number>;
  /** Resolves when the service's main process exits (whether asked to or not). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout line `accept` returns a value for. */
  waitForLine<T>(accept: (line: string) => T | undefined, deadlineMs: number, signal?: AbortSignal): Promise<T>;
  /** Adds the process groups now below the service to `groups`. */
  sample(): void;
}

export async function startService(
  name: string,
  command: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd: string; output: OutputSink },
): Promise<Service> {
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const pid = child.pid as number;
  const listeners = new Set<(line: string) => void>();
  const split = (stream: 'stdout' | 'stderr', readable: NodeJS.ReadableStream) => {
    let buf = '';
    readable.setEncoding('utf8');
    readable.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        opts.output(name, stream, line);
        if (stream === 'stdout') for (const l of listeners) l(line);
      }
    });
    // A service that outlives a pipe error must not take the parent down with it.
    readable.on('error', () => {});
  };
  split('stdout', child.stdout as NodeJS.ReadableStream);
  split('stderr', child.stderr as NodeJS.ReadableStream);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const groups = new Set<number>([pid]);
  const service: Service = {
    name,
    pid,
    child,
    groups,
    exited,
    sample() {
      for (const p of descendants(pid, listProcs())) groups.add(p.pgid);
    },
    waitForLine<T>(accept: (line: string) => T | undefined, deadlineMs: number, signal?: AbortSignal) {
      return new Promise<T>((resolve, reject) => {
        const done = (f: () => void) => {
          listeners.delete(onLine);
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          f();
        };
        const onLine = (line: string) => {
          const v = accept(line);
          if (v !== undefined) done(() => resolve(v));
        };
        const onAbort = () => done(() => reject(new Error(`aborted while waiting for ${name}`)));
        const timer = setTimeout(
          () => done(() => reject(new Error(`${name} did not get ready within ${deadlineMs / 1000} s`))),
          deadlineMs,
        );
        listeners.add(onLine);
        signal?.addEventListener('abort', onAbort);
        void exited.then(({ code, signal: sig }) =>
          done(() => reject(new Error(`${name} exited (${sig ?? `code ${code}`}) before it was ready`))),
        );
      });
    },
  };
  return service;
}

/** SIGTERM to the service's group; SIGKILL to every group seen below it after `graceMs`; resolves when none is left. */
export async function stopService(s: Service, graceMs: number): Promise<void> {
  s.sample();
  killGroup(s.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  let killed = false;
  for (;;) {
    // Children reparented away from the service keep their group id, so the groups are the truth.
    if (!killed) s.sample();
    const left = liveInGroups(s.groups);
    if (left.length === 0) return;
    if (!killed && Date.now() > deadline) {
      for (const g of s.groups) killGroup(g, 'SIGKILL');
      killed = true;
    }
    if (killed && Date.now() > deadline + 10_000)
      throw new Error(`${s.name}: ${left.length} process(es) survived SIGKILL`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Synchronous last resort (process 'exit' handler): SIGKILL every group of every service. */
export function killServicesNow(services: Iterable<Service>): void {
  for (const s of services) for (const g of s.groups) killGroup(g, 'SIGKILL');
}

interface ServiceRecord {
  name: string;
  pid: number;
  startTime: number;
  groups: number[];
}

/** Records the running services so a later start can clean up after a start that was SIGKILLed. */
export function writeServiceRecords(file: string, services: Service[]): void {
  const records: ServiceRecord[] = services.map((s) => ({
    name: s.name,
    pid: s.pid,
    startTime: readProc(s.pid)?.startTime ?? 0,
    groups: [...s.groups],
  }));
  writeFileSync(file, `${JSON.stringify(records)}\n`, { mode: 0o600 });
}

/** Kills services a previous start left behind (same pid and start time ⇒ the same process). */
export function reapStaleServices(file: string): string[] {
  let records: ServiceRecord[];
  try {
    records = JSON.parse(readFileSync(file, 'utf8')) as ServiceRecord[];
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const r of records) {
    const p = readProc(r.pid);
    if (p === undefined || p.startTime !== r.startTime) continue;
    const groups = new Set([...r.groups, ...descendants(r.pid).map((d) => d.pgid)]);
    for (const g of groups) killGroup(g, 'SIGKILL');
    reaped.push(r.name);
  }
  rmSync(file, { force: true });
  return reaped;
}

/** Runs a short command to completion, collecting its output. */
export function run(
  command: string,
  args: string[],
  opts: {
    env: NodeJS.ProcessEnv;
    cwd: string;
    input?: string;
    output?: (stream: 'stdout' | 'stderr', text: string) => void;
  },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      opts.output?.('stdout', d);
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      opts.output?.('stderr', d);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}
