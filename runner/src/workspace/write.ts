import { lstat, unlink } from 'node:fs/promises';
import { checkWorkspacePath } from '@switchyard/protocol';
import { createFileBeneath, inFolderBeneath, NOT_A_FILE } from './beneath.ts';
import type { DiskFile } from './scan.ts';

// Writing a file from the durable copy into the workspace. The path is checked again here (the
// manifest came over the network), every folder on the way must be a real folder (never a link),
// each opened inside the one before (beneath.ts), and the file is opened O_NOFOLLOW: nothing a
// restore writes can land outside the workspace, whatever the agent renames meanwhile.

/** Writes one file; answers how it looks on disk afterwards (what a save compares against). */
export async function writeInside(
  root: string,
  path: string,
  data: Uint8Array,
  opts: {
    executable: boolean;
    modifiedAt: number;
    /** The mode the CLI's files get (sandbox.ts `modeForCli`: its group's too in container mode). */
    modeForCli?: (mode: number) => number;
  },
): Promise<DiskFile> {
  const checked = checkWorkspacePath(path);
  if (!checked.ok) throw new Error(`refusing to restore ${JSON.stringify(path)}: ${checked.message}`);
  const forCli = opts.modeForCli ?? ((m: number) => m);
  const mode = forCli(opts.executable ? 0o755 : 0o644);
  const fh = await createFileBeneath(root, checked.segments, {
    folderMode: forCli(0o755),
    fileMode: mode,
    replaceOther: true,
  }).catch((err: NodeJS.ErrnoException) => {
    // A link or a file where a folder or the file should be: refused, never followed.
    if (err.code === 'ENOTDIR' || err.code === 'ELOOP' || err.code === NOT_A_FILE)
      throw new Error(`refusing to restore ${path}: ${err.message}`);
    throw err;
  });
  try {
    await fh.writeFile(data);
    const when = new Date(opts.modifiedAt);
    await fh.utimes(when, when);
    const st = await fh.stat();
    // A new file mostly has its mode from the open already; an existing one (or a umask) may not.
    if ((st.mode & 0o777) !== mode) await fh.chmod(mode);
    return { size: st.size, mtimeMs: Math.floor(st.mtimeMs), ino: st.ino, executable: opts.executable };
  } finally {
    await fh.close();
  }
}

/** Removes a file the durable copy no longer has; never follows a link, never removes a folder. */
export async function removeInside(root: string, path: string): Promise<void> {
  const checked = checkWorkspacePath(path);
  if (!checked.ok) return;
  const leaf = checked.segments.at(-1) ?? '';
  await inFolderBeneath(root, checked.segments.slice(0, -1), undefined, async (here) => {
    const st = await lstat(here(leaf)).catch(() => undefined);
    if (st !== undefined && !st.isDirectory()) await unlink(here(leaf));
  }).catch((err: NodeJS.ErrnoException) => {
    // A folder on the way that is gone or is not a real folder holds nothing of this path.
    if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw err;
  });
}
