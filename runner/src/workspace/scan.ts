import { createHash } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { checkWorkspacePath, eachLimited } from '@switchyard/protocol';
import { openFileBeneath, readAtMost } from './beneath.ts';

// What is in the workspace on disk: regular files only. Symlinks, devices, FIFOs and sockets are
// not part of the durable workspace and are never followed, so a link the agent planted cannot
// make a save read (and publish) a file outside the workspace.

export interface DiskFile {
  size: number;
  mtimeMs: number;
  ino: number;
  executable: boolean;
}

export interface Scan {
  files: Map<string, DiskFile>;
  /** Paths left out, and why (a link, a special file, a name no side accepts). */
  skipped: Array<{ path: string; why: string }>;
}

/** Files of one folder stat'ed at once during a walk. */
const STAT_CONCURRENCY = 16;

/** Walks `root` without following links; names are workspace paths (`/`-separated, relative). */
export async function scanWorkspace(root: string): Promise<Scan> {
  const files = new Map<string, DiskFile>();
  const skipped: Scan['skipped'] = [];
  const walk = async (rel: string): Promise<void> => {
    const dir = rel === '' ? root : join(root, rel);
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    const folders: string[] = [];
    const regular: string[] = [];
    for (const e of entries) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        folders.push(path);
        continue;
      }
      if (!e.isFile()) {
        skipped.push({ path, why: e.isSymbolicLink() ? 'a symbolic link' : 'not a regular file' });
        continue;
      }
      const checked = checkWorkspacePath(path);
      if (!checked.ok) {
        skipped.push({ path, why: `its name ${checked.message}` });
        continue;
      }
      regular.push(path);
    }
    // Each stat is a round trip to libuv's thread pool: several in flight, not one after another.
    const stats: Array<DiskFile | undefined> = [];
    await eachLimited([...regular.keys()], STAT_CONCURRENCY, async (i) => {
      stats[i] = await statInside(root, regular[i] as string);
    });
    for (const [i, path] of regular.entries()) {
      const st = stats[i];
      if (st === undefined) skipped.push({ path, why: 'it changed into something else while saving' });
      else files.set(path, st);
    }
    for (const path of folders) await walk(path);
  };
  await walk('');
  return { files, skipped };
}

/** The file's stat without following a link at the leaf (contents are read by readInside, which checks the whole path). */
export async function statInside(root: string, path: string): Promise<DiskFile | undefined> {
  const st = await lstat(join(root, path)).catch(() => undefined);
  if (st === undefined || !st.isFile()) return undefined;
  return { size: st.size, mtimeMs: Math.floor(st.mtimeMs), ino: st.ino, executable: (st.mode & 0o100) !== 0 };
}

/**
 * Reads a workspace file, refusing one reached through a link: each folder on the way is opened
 * inside the one before and the file last, none through a link (beneath.ts), so a folder swapped
 * for a link since the walk fails the read instead of leading it out of the workspace.
 */
export async function readInside(root: string, path: string, maxBytes: number): Promise<Buffer> {
  const fh = await openFileBeneath(root, path.split('/'));
  try {
    const st = await fh.stat();
    if (st.size > maxBytes) throw new Error(`${path} is ${st.size} bytes, over ${maxBytes}`);
    const data = await readAtMost(fh, maxBytes, st.size);
    if (data === null) throw new Error(`${path} grew past ${maxBytes} bytes while it was read`);
    return data;
  } finally {
    await fh.close();
  }
}

export function sha256(data: Buffer | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
