// A host that crashes (or is SIGKILLed) cannot stop its tasks. While a task runs, the host keeps
// `<stateDir>/running/<id>.json` (its main process and every process group seen below it), so
// the next host started on the same state directory can kill what is left before it starts.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { descendants, killGroup, listProcs, readProc } from './process-tree.ts';

export interface RunningRecord {
  id: string;
  pid: number;
  /** The main process's start time: a pid alone may have been reused since. */
  startTime: number;
  groups: number[];
}

/** Writes (or rewrites) a running task's record. Best effort: only used to reap after a crash. */
export function recordRunning(stateDir: string, record: RunningRecord): void {
  try {
    const dir = join(stateDir, 'running');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${record.id}.json`), JSON.stringify(record));
  } catch {
    // Nothing to reap with, then; the task itself is unaffected.
  }
}

/** Drops a stopped task's record. */
export function forgetRunning(stateDir: string, id: string): void {
  rmSync(join(stateDir, 'running', `${id}.json`), { force: true });
}

/**
 * Kills what a previous host left running (it crashed or was SIGKILLed before stopping its
 * tasks): every recorded task whose main process is still the same process (pid and start
 * time match), and its recorded groups. Returns how many tasks were reaped.
 */
export function reapStaleTasks(stateDir: string): number {
  const dir = join(stateDir, 'running');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const file = join(dir, name);
    try {
      const r = JSON.parse(readFileSync(file, 'utf8')) as RunningRecord;
      const self = readProc(r.pid);
      const same = self !== undefined && self.startTime === r.startTime;
      // Without the main process there is no proof the recorded group ids still mean these tasks.
      if (same) {
        const procs = listProcs();
        const groups = new Set([...r.groups, ...descendants(r.pid, procs).map((p) => p.pgid)]);
        for (const pgid of groups) killGroup(pgid, 'SIGKILL');
        reaped += 1;
      }
    } catch {
      // unreadable record: drop it
    }
    rmSync(file, { force: true });
    rmSync(join(stateDir, 'tasks', name.replace(/\.json$/, '')), { recursive: true, force: true });
  }
  return reaped;
}
