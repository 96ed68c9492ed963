import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { isTmpfs, throwawayEdgeState } from '../bench/edge-state.ts';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Whether /dev/shm is tmpfs, as the kernel's mount table says (not as the module under test finds out). */
const shmIsTmpfs = readFileSync('/proc/mounts', 'utf8')
  .split('\n')
  .some((line) => {
    const [, mountPoint, type] = line.split(' ');
    return mountPoint === '/dev/shm' && type === 'tmpfs';
  });

describe('a throwaway stack’s edge state', () => {
  it.runIf(shmIsTmpfs)('is a new empty directory on tmpfs where the machine has one', () => {
    const a = throwawayEdgeState('sy-edge-state-test');
    const b = throwawayEdgeState('sy-edge-state-test');
    made.push(a.dir, b.dir);
    expect(a.tmpfs).toBe(true);
    expect(a.dir.startsWith('/dev/shm/sy-edge-state-test-state-')).toBe(true);
    expect(isTmpfs(a.dir)).toBe(true);
    expect(b.dir).not.toBe(a.dir);
  });

  it('is under the temp dir when asked for the disk, and says whether that is tmpfs', () => {
    const s = throwawayEdgeState('sy-edge-state-test', { onDisk: true });
    made.push(s.dir);
    expect(s.dir.startsWith(`${tmpdir()}/sy-edge-state-test-state-`)).toBe(true);
    expect(s.tmpfs).toBe(isTmpfs(tmpdir()));
  });

  it('tells tmpfs from other file systems and from paths that do not exist', () => {
    expect(isTmpfs('/proc')).toBe(false);
    expect(isTmpfs('/no/such/dir')).toBe(false);
    if (shmIsTmpfs) expect(isTmpfs('/dev/shm')).toBe(true);
  });
});
