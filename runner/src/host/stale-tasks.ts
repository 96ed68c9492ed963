// A host that crashes (or is SIGKILLed) cannot stop its tasks. While a task runs, the host keeps
// `<stateDir>/running/<id>.json` (its main process and every process group seen below it), so
// the next host started on the same state directory can kill what is left before it starts.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { descendants, killGroup, listProcs, readProc } from './process-tree.ts';

const RunningRecord = z.object({
  id: z.string(),
  pid: z.number().int().positive(),
  /** The main process's start time: a pid alone may have been reused since. */
  startTime: z.number(),
  groups: z.array(z.number().int().positive()),
});
export type RunningRecord = z.infer<typeof RunningRecord>;

/**
 * Writes (or rewrites) a running task's record. Best effort: only used to reap after a crash.
 * Written whole beside it, then renamed over it: the record is rewritten while the task runs, and
 * a host killed between writeFileSync's truncation and its write would leave a record the next
 * host cannot read, so the very tasks it exists for would survive.
 */
export function recordRunning(stateDir: string, record: RunningRecord): void {
  try {
    const dir = join(stateDir, 'running');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${record.id}.json`);
    writeFileSync(`${file}.part`, JSON.stringify(record));
    renameSync(`${file}.part`, file);
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
    const file = join(dir, name);
    if (!name.endsWith('.json')) {
      // A record the crashed host was still writing; the one it replaces is beside it.
      if (name.endsWith('.json.part')) rmSync(file, { force: true });
      continue;
    }
    try {
      const r = RunningRecord.parse(JSON.parse(readFileSync(file, 'utf8')));
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
