// Where a bench's throwaway stack (deleted when it stops) keeps the edge's local state. workerd
// commits every Durable Object and D1 write with an fsync, on the one thread that runs every
// isolate, so on a disk each commit holds up every request the edge is serving: on
// this project's 2-core VMs a pooled first message's POST and the runner's link behind it waited
// 20–60 ms that way (docs/DESIGN.md "The local stack's disk (benches)"). State that is thrown away gains
// nothing from a disk; on tmpfs those fsyncs cost nothing. `npm start` and the tests keep theirs
// on disk.
import { mkdtempSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** statfs(2) f_type of tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
const SHM = '/dev/shm';

/** True when `dir` is on tmpfs. */
export function isTmpfs(dir: string): boolean {
  try {
    return statfsSync(dir).type === TMPFS_MAGIC;
  } catch {
    return false;
  }
}

/**
 * A new empty directory for a throwaway stack's edge state (the caller removes it): on tmpfs
 * (/dev/shm) where the machine has one, else under the temp dir; `onDisk` forces the temp dir, so
 * a bench can show what the disk costs. `tmpfs`: whether the directory made is on tmpfs.
 */
export function throwawayEdgeState(prefix: string, opts: { onDisk?: boolean } = {}): { dir: string; tmpfs: boolean } {
  const dir = mkdtempSync(join(opts.onDisk !== true && isTmpfs(SHM) ? SHM : tmpdir(), `${prefix}-state-`));
  // Asked of the directory itself: a temp dir that is tmpfs (TMPDIR=/dev/shm) is not a disk.
  return { dir, tmpfs: isTmpfs(dir) };
}
