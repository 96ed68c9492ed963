import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '../../../test/helpers/poll.ts';

// Runs `switchyard-runner` as a real child process (its own process group)
// and parses its JSON log lines, which name every CLI pid it starts. Every
// pid seen is remembered so `assertNoOrphans` can prove nothing survived.

export const RUNNER_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'switchyard-runner.js');

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface RunnerProcess {
  readonly pid: number;
  readonly logs: LogLine[];
  /** Raw stderr (to check that no secret leaks in any form). */
  stderr(): string;
  stdout(): string;
  /** CLI process ids this runner reported, in start order. */
  cliPids(): number[];
  waitForLog(pred: (l: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  readonly exited: Promise<{ code: number | null; signal: string | null; atMs: number }>;
  kill(signal: NodeJS.Signals): void;
}

const tracked = new Set<number>();

/** Starts the runner from `entry`: the bin, or the bundle the image runs (runner/scripts/build-bundle.ts). */
export function startRunner(args: string[], env: Record<string, string>, entry = RUNNER_BIN): RunnerProcess {
  // A minimal environment: nothing from the test machine (keys, tokens) leaks in by accident.
  const child: ChildProcess = spawn(process.execPath, [entry, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.pid === undefined) throw new Error('runner did not start');
  const pid = child.pid;
  tracked.add(pid);
  const logs: LogLine[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let stdout = '';
  let partial = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    const text = d.toString();
    stderr += text;
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        const parsed = JSON.parse(line) as LogLine;
        logs.push(parsed);
        if (parsed.msg === 'cli started' && typeof parsed.pid === 'number') tracked.add(parsed.pid);
      } catch {
        logs.push({ level: 'raw', msg: line });
      }
      if (process.env.RUNNER_TEST_LOGS) process.stderr.write(`[runner ${pid}] ${line}\n`);
    }
    for (const w of [...waiters]) w();
  });
  const exited = new Promise<{ code: number | null; signal: string | null; atMs: number }>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal, atMs: Date.now() });
      for (const w of [...waiters]) w();
    });
  });
  let exitedYet = false;
  void exited.then(() => (exitedYet = true));
  return {
    pid,
    logs,
    stderr: () => stderr,
    stdout: () => stdout,
    cliPids: () => logs.filter((l) => l.msg === 'cli started').map((l) => l.pid as number),
    waitForLog(pred, what, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = logs.find(pred);
          if (hit) {
            done();
            resolve(hit);
          } else if (exitedYet) {
            done();
            reject(new Error(`runner exited before logging ${what}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for runner log: ${what}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    exited,
    kill: (signal) => {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    },
  };
}

/** Live (non-zombie) processes in process group `pgid`, from /proc. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command: state ppid pgrp ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') out.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/**
 * Every runner and CLI process group seen since the last call must be gone
 * (zombies aside) within `timeoutMs`. Survivors are killed and reported.
 */
export async function assertNoOrphans(timeoutMs = 5000): Promise<void> {
  const groups = [...tracked];
  tracked.clear();
  // Polled with a deadline: the death of a process that is not our child raises no event.
  const gone = () => groups.every((g) => groupMembers(g).length === 0);
  await until('the tracked process groups to be gone', gone, timeoutMs).catch(() => undefined);
  const alive = groups.filter((g) => groupMembers(g).length > 0);
  if (alive.length === 0) return;
  const report = alive.map((g) => `group ${g}: ${groupMembers(g).join(',')}`).join('; ');
  for (const g of alive) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // gone
    }
  }
  throw new Error(`orphan processes survived: ${report}`);
}
