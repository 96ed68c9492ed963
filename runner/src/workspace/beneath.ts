// Files under a directory the agent can change while the runner works in it (the workspace, the
// CLI's config dir). Checking a path and then opening it by name is a race: a folder on the way
// can be swapped for a link between the two (a loop in the agent's shell does it in
// microseconds), and the open then lands wherever the link points, in the runner's own
// `/proc/self/environ` or, with the runner's rights, anywhere else. So nothing here opens a path
// by name from the root: it opens the root, then each folder relative to the folder it already
// holds open, never following a link, and the file last. A folder held open stays that folder
// whatever happens to its name.
//
// Node has no openat, so "relative to an open folder" is `/proc/self/fd/<fd>/<name>`: the kernel
// resolves `/proc/self/fd/<fd>` to the open folder itself, and <name> in it with the flags given
// (O_NOFOLLOW: a link there is refused with ELOOP, not followed). The folders are opened and
// closed synchronously: each call is microseconds of the kernel's time, and through libuv's thread
// pool every one was a round trip that made a restore of 5,000 files 1.8 times as long.
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { type FileHandle, lstat, open, unlink } from 'node:fs/promises';
import { join } from 'node:path';

const FOLDER = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** `name` in the folder open as descriptor `dir`. */
const at = (dir: number, name: string) => `/proc/self/fd/${dir}/${name}`;

/**
 * Runs `use` with the folder `root/folders...` held open; `use` names an entry of it as `here(name)`
 * and must not follow a link at that name itself (lstat, unlink, open with O_NOFOLLOW). Every
 * folder on the way must be a real folder (else it throws, code ENOTDIR, naming it); with
 * `makeMode`, missing ones are created with that mode. Names are already checked (no `..`, no
 * `/`), as workspace paths are.
 */
export async function inFolderBeneath<T>(
  root: string,
  folders: readonly string[],
  makeMode: number | undefined,
  use: (here: (name: string) => string) => Promise<T>,
): Promise<T> {
  const dir = folderBeneath(root, folders, makeMode);
  try {
    return await use((name) => at(dir, name));
  } catch (err) {
    throw named(err, dir, join(root, ...folders));
  } finally {
    closeSync(dir);
  }
}

/** `err` naming the folder `path` instead of the descriptor `dir` it was reached through. */
function named(err: unknown, dir: number, path: string): unknown {
  if (err instanceof Error) err.message = err.message.replaceAll(at(dir, ''), `${path}/`);
  return err;
}

/**
 * Opens the file `root/segments...` for reading, never through a link, and only a regular file
 * (O_NONBLOCK: a FIFO planted there cannot block the runner before fstat refuses it).
 */
export async function openFileBeneath(root: string, segments: readonly string[]): Promise<FileHandle> {
  const leaf = segments.at(-1);
  if (leaf === undefined) throw new Error('no file name');
  const fh = await inFolderBeneath(root, segments.slice(0, -1), undefined, (here) =>
    open(here(leaf), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK),
  ).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ELOOP') throw Object.assign(new Error(`${segments.join('/')} is a link`), { code: 'ELOOP' });
    throw err;
  });
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw new Error(`${segments.join('/')} is not a regular file`);
  }
  return fh;
}

/**
 * Opens the file `root/segments...` for writing (created with `fileMode`, truncated), making
 * missing folders with `folderMode`; never through a link, and only a regular file. With
 * `replaceOther`, a link or special file standing where the file goes is removed first (the
 * entry is replaced, never what it points to); without, it is refused (ELOOP). O_NONBLOCK: a FIFO
 * planted there fails the open instead of blocking it.
 */
export async function createFileBeneath(
  root: string,
  segments: readonly string[],
  o: { folderMode: number; fileMode: number; replaceOther: boolean },
): Promise<FileHandle> {
  const leaf = segments.at(-1);
  if (leaf === undefined) throw new Error('no file name');
  const fh = await inFolderBeneath(root, segments.slice(0, -1), o.folderMode, async (here) => {
    if (o.replaceOther) {
      const existing = await lstat(here(leaf)).catch(() => undefined);
      if (existing !== undefined && !existing.isFile() && !existing.isDirectory()) await unlink(here(leaf));
    }
    return open(
      here(leaf),
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      o.fileMode,
    );
  });
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw Object.assign(new Error(`${segments.join('/')} is not a regular file`), { code: NOT_A_FILE });
  }
  return fh;
}

/**
 * The whole file open as `fh`, or null when it holds more than `maxBytes`: never read past
 * `maxBytes + 1`, so a file the agent keeps growing after its size was looked at cannot make the
 * runner hold more than the bound (`FileHandle.readFile` reads to the end, whatever that is). Read
 * into one buffer of the size looked at (`sizeHint`) plus the byte that tells it grew: an unchanged
 * file is one read and the read that finds its end, as `readFile` does.
 */
export async function readAtMost(fh: FileHandle, maxBytes: number, sizeHint: number): Promise<Buffer | null> {
  let buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, sizeHint + 1));
  let total = 0;
  for (;;) {
    if (total === buf.length) {
      const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
      buf.copy(bigger, 0, 0, total);
      buf = bigger;
    }
    const { bytesRead } = await fh.read(buf, total, buf.length - total, total);
    if (bytesRead === 0) return buf.subarray(0, total);
    total += bytesRead;
    if (total > maxBytes) return null;
  }
}

/** The code of the error for something other than a regular file where one should be. */
export const NOT_A_FILE = 'ENOTREG';

/** Opens `root`, then each of `folders` inside the last one opened; throws naming a folder that is not one. */
function folderBeneath(root: string, folders: readonly string[], makeMode: number | undefined): number {
  let dir = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  let path = root;
  try {
    for (const name of folders) {
      if (makeMode !== undefined)
        try {
          mkdirSync(at(dir, name), { mode: makeMode });
        } catch (err) {
          // Another restore may have made it; a link or a file there is refused by the open below.
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
      let next: number;
      try {
        next = openSync(at(dir, name), FOLDER);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ELOOP' || code === 'ENOTDIR')
          throw Object.assign(new Error(`${name} is not a folder`), { code: 'ENOTDIR' });
        throw err;
      }
      closeSync(dir);
      dir = next;
      path = join(path, name);
    }
    return dir;
  } catch (err) {
    closeSync(dir);
    throw named(err, dir, path);
  }
}
