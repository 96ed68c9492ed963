// What a CLI reads from its working directory when it starts, beyond what its flags turn off.
// pi takes `.pi/` in its working directory as the project's configuration: `settings.json` merged
// over the settings the runner writes (`shellCommandPrefix` runs before every shell command it
// executes — after the guard and the person approving a call saw the command — and `shellPath`
// picks the shell), and `SYSTEM.md`/`APPEND_SYSTEM.md` as its system prompt. No pi flag turns
// that off (its --no-extensions/--no-skills/... cover the rest of `.pi/`). The workspace is its
// working directory, and what is in it comes from uploads, cloned repositories and the agent itself,
// so the runner does not start pi while the workspace's `.pi` holds anything but empty folders
// (checked before every CLI spawn, ../cli/spawn.ts).
// claude is started with `--setting-sources ''`, so its project settings are never read.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backend } from '@switchyard/protocol';
import type { RunnerError } from '../errors.ts';

const PROJECT_DIR: Record<Backend, string | null> = { pi: '.pi', claude: null };

/** Why `backend` may not start in `workspace`, or null when it may. */
export async function projectConfigRefusal(backend: Backend, workspace: string): Promise<RunnerError | null> {
  const dir = PROJECT_DIR[backend];
  if (dir === null) return null;
  const found = await firstNonFolder(workspace, dir);
  if (found === null) return null;
  return {
    code: 'workspace_cli_config',
    message:
      `the workspace holds ${found}: ${backend} would read ${dir}/ there as the project's configuration when it ` +
      `starts (settings over the runner's, such as a prefix run before every shell command, and a system prompt), ` +
      `so it is not started; delete ${dir}/ from the workspace (the Files API) to use ${backend} in this session`,
    retryable: false,
  };
}

/** The first entry under `root/rel` (itself included) that is not a folder, relative to `root`; null if none. */
async function firstNonFolder(root: string, rel: string): Promise<string | null> {
  const pending = [rel];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(join(root, next));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    // A symlink counts as content: the CLI would follow it.
    if (!st.isDirectory()) return next;
    for (const name of await readdir(join(root, next))) pending.push(join(next, name));
  }
  return null;
}
