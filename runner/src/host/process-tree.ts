// Linux process-tree helpers for the local runner host. A "task" is a runner
// process in its own process group, but the runner starts each CLI in a group
// (and session) of its own, so killing the runner's group alone would orphan
// the CLI. A container's whole tree dies with it; to match that, the host
// remembers every process group it has seen below a task (snapshots from
// /proc while the task runs) and signals all of them.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';

export { killGroup } from '../process-group.ts';

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Single-letter state from /proc/PID/stat (R, S, D, Z, X, ...). */
  state: string;
  /** Clock ticks since boot when the process started: (pid, startTime) names a process uniquely. */
  startTime: number;
}

/** One process's /proc/PID/stat, or undefined if it is gone (or this is not Linux). */
export function readProc(pid: number): ProcInfo | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces or ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = text.slice(close + 2).split(' ');
  // f[0] = state (field 3), f[1] = ppid, f[2] = pgrp, f[19] = starttime (field 22)
  const ppid = Number(f[1]);
  const pgid = Number(f[2]);
  const startTime = Number(f[19]);
  if (!Number.isInteger(ppid) || !Number.isInteger(pgid)) return undefined;
  return { pid, ppid, pgid, state: f[0] ?? '?', startTime };
}

export function listProcs(): ProcInfo[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcInfo[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProc(Number(name));
    if (p) out.push(p);
  }
  return out;
}

const dead = (p: ProcInfo) => p.state === 'Z' || p.state === 'X';

/** The live processes below `root` (root included when alive), from one /proc snapshot. */
export function descendants(root: number, procs: ProcInfo[] = listProcs()): ProcInfo[] {
  const children = new Map<number, ProcInfo[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
  }
  const out: ProcInfo[] = [];
  const self = procs.find((p) => p.pid === root);
  if (self && !dead(self)) out.push(self);
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    for (const c of children.get(pid) ?? []) {
      if (!dead(c)) out.push(c);
      queue.push(c.pid);
    }
  }
  return out;
}

/** Live (non-zombie) processes whose group is one of `pgids`. */
export function liveInGroups(pgids: Iterable<number>, procs: ProcInfo[] = listProcs()): ProcInfo[] {
  const set = new Set(pgids);
  return procs.filter((p) => set.has(p.pgid) && !dead(p));
}

/** Docker/ECS convention for a container whose main process died of a signal: 128 + signal number. */
export function exitCodeFor(code: number | null, signal: NodeJS.Signals | null): number | undefined {
  if (code !== null) return code;
  if (signal === null) return undefined;
  const n = constants.signals[signal];
  return n === undefined ? undefined : 128 + n;
}

/**
 * Claims a state directory for this process through `file` ({pid, startTime}): throws when a live
 * process (same pid *and* start time, so not a recycled pid) holds it, takes it over when the
 * holder is gone. Returns the release function. Guards the "reap what a crashed predecessor
 * left" logic from reaping a predecessor that is in fact still running.
 */
export function claimStateDir(file: string, what: string): () => void {
  let holder: { pid?: unknown; startTime?: unknown } | undefined;
  try {
    holder = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; startTime?: unknown };
  } catch {
    holder = undefined;
  }
  if (holder && typeof holder.pid === 'number' && holder.pid !== process.pid) {
    const p = readProc(holder.pid);
    if (p !== undefined && p.startTime === holder.startTime && p.state !== 'Z') {
      throw new Error(`${what} is in use by process ${holder.pid}; stop it first or use another directory`);
    }
  }
  writeFileSync(file, `${JSON.stringify({ pid: process.pid, startTime: readProc(process.pid)?.startTime ?? 0 })}\n`, {
    mode: 0o600,
  });
  return () => {
    try {
      const now = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown };
      if (now.pid === process.pid) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  };
}
