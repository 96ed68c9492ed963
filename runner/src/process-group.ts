// The runner starts every child that may start others (a CLI, git, a probe) in a process group of
// its own, and ends it as a group: signalling only the leader would leave its children behind.

/** Signals a whole process group; a group that is already gone (or not ours to signal) is not an error. */
export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false; // never -1 / -0: that would be "everyone"
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH' || code === 'EPERM') return false;
    throw err;
  }
}
