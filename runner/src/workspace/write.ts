import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, unlink } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { checkWorkspacePath } from '@switchyard/protocol';
import type { DiskFile } from './scan.ts';

// Writing a file from the durable copy into the workspace. The path is checked again here (the
// manifest came over the network), every folder on the way must be a real folder (never a link),
// and the file is opened O_NOFOLLOW: nothing a restore writes can land outside the workspace.

/**
 * What one restore has checked already: the workspace's real path, and the folders it found (or
 * made) real folders. A folder is checked once per restore, not once per file in it; the
 * realpath of the whole chain just before each open still catches one swapped for a link since.
 */
export interface WriteContext {
  realRoot: string;
  folders: Set<string>;
}

export async function writeContext(root: string): Promise<WriteContext> {
  return { realRoot: await realpath(root), folders: new Set() };
}

/** Writes one file; answers how it looks on disk afterwards (what a save compares against). */
export async function writeInside(
  ctx: WriteContext,
  path: string,
  data: Uint8Array,
  opts: { executable: boolean; modifiedAt: number },
): Promise<DiskFile> {
  const checked = checkWorkspacePath(path);
  if (!checked.ok) throw new Error(`refusing to restore ${JSON.stringify(path)}: ${checked.message}`);
  const { realRoot } = ctx;
  let dir = realRoot;
  for (const seg of checked.segments.slice(0, -1)) {
    const next = join(dir, seg);
    dir = next;
    if (ctx.folders.has(next)) continue;
    let st = await lstat(next).catch(() => undefined);
    if (st === undefined) {
      // Restores run in parallel: another file may create the same folder first.
      await mkdir(next, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      st = await lstat(next);
    }
    if (!st.isDirectory()) throw new Error(`refusing to restore ${path}: ${seg} is not a folder`);
    ctx.folders.add(next);
  }
  // One more look at the whole folder chain, just before the open.
  const realDir = await realpath(dir);
  if (realDir !== dir || (realDir !== realRoot && !realDir.startsWith(`${realRoot}${sep}`)))
    throw new Error(`refusing to restore ${path}: its folder resolves outside the workspace`);
  const target = join(dir, checked.segments.at(-1) ?? '');
  const existing = await lstat(target).catch(() => undefined);
  // A link or special file where the durable copy has a file: replace the entry, never its target.
  if (existing !== undefined && !existing.isFile() && !existing.isDirectory()) await unlink(target);
  const mode = opts.executable ? 0o755 : 0o644;
  const fh = await open(
    target,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    mode,
  );
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
  const realRoot = await realpath(root);
  const full = join(realRoot, ...checked.segments);
  // The folder must be where it looks: a link in the way would make the unlink land elsewhere.
  const realDir = await realpath(join(full, '..')).catch(() => undefined);
  if (realDir === undefined || (realDir !== realRoot && !realDir.startsWith(`${realRoot}${sep}`))) return;
  if (realDir !== join(full, '..')) return;
  const st = await lstat(full).catch(() => undefined);
  if (st !== undefined && !st.isDirectory()) await unlink(full);
}
