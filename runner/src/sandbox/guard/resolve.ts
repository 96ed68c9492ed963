// Resolves a path the way the kernel will when the tool opens it: component by
// component, following symlinks where they are, `..` applied to the resolved
// parent (so `ws/link/../x` goes where `link` points, not back into ws). A
// missing component and everything after it is taken literally (nothing is
// there to follow yet), which is what a later `mkdir -p` + write would do.
//
// Pure over an FsView so rules can be tested against a fake tree; nodeFs()
// is this process's view, rootedFs() another mount namespace's (the runner
// deciding for claude under bubblewrap). Node builtins only (loaded inside pi).
import { lstatSync, readlinkSync } from 'node:fs';

export type Entry = 'dir' | 'file' | 'symlink' | 'missing' | 'other';

export interface FsView {
  /** What is at this absolute path, without following a final symlink. Throws on EACCES and the like. */
  lstat(path: string): Entry;
  readlink(path: string): string;
}

export type Resolution = { ok: true; path: string; exists: boolean } | { ok: false; reason: string; proc?: true };

const MAX_LINKS = 40;

export function resolveReal(absolute: string, fs: FsView): Resolution {
  if (!absolute.startsWith('/')) return { ok: false, reason: `not an absolute path: ${absolute}` };
  const stack: string[] = [];
  let todo = absolute.split('/');
  let links = 0;
  // How many trailing components of `stack` do not exist (0 = stack exists).
  let missing = 0;
  while (todo.length > 0) {
    const c = todo.shift() as string;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      stack.pop();
      if (missing > 0) missing--;
      continue;
    }
    const here = `/${[...stack, c].join('/')}`;
    if (stack.length === 0 && c === 'proc') return { ok: false, reason: 'under /proc', proc: true };
    if (missing > 0) {
      stack.push(c);
      missing++;
      continue;
    }
    let entry: Entry;
    try {
      entry = fs.lstat(here);
    } catch (err) {
      return { ok: false, reason: `cannot check ${here}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
    }
    switch (entry) {
      case 'missing':
        stack.push(c);
        missing = 1;
        break;
      case 'dir':
        stack.push(c);
        break;
      case 'file':
      case 'other':
        if (todo.some((t) => t !== '' && t !== '.')) return { ok: false, reason: `${here} is not a directory` };
        stack.push(c);
        break;
      case 'symlink': {
        if (++links > MAX_LINKS) return { ok: false, reason: `too many symbolic links at ${here}` };
        let target: string;
        try {
          target = fs.readlink(here);
        } catch (err) {
          return {
            ok: false,
            reason: `cannot read link ${here}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
          };
        }
        if (target.startsWith('/')) stack.length = 0;
        todo = [...target.split('/'), ...todo];
        break;
      }
    }
  }
  return { ok: true, path: `/${stack.join('/')}`, exists: missing === 0 };
}

/** This process's own view of the filesystem. */
export function nodeFs(): FsView {
  return rootedFs('');
}

/**
 * The filesystem as seen from `root`, a directory this process reaches (`/proc/<pid>/root`: what a
 * process in another mount namespace sees). resolveReal walks links itself and hands lstat only
 * components it resolved, so nothing below `root` is followed by the kernel, and an absolute link
 * stays under `root`.
 */
export function rootedFs(root: string): FsView {
  return {
    lstat(path) {
      try {
        const st = lstatSync(root + path);
        if (st.isSymbolicLink()) return 'symlink';
        if (st.isDirectory()) return 'dir';
        if (st.isFile()) return 'file';
        return 'other';
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return 'missing';
        throw err;
      }
    },
    readlink: (path) => readlinkSync(root + path),
  };
}
