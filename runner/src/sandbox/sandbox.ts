// The runner's seam to both walls. The runner asks for `guardOption(backend)`
// when it builds SpawnOptions (the adapter turns it into claude's tool-call
// hooks, which the runner answers, or pi's -e), then passes the adapter's
// SpawnSpec through `prepare()` right before spawning: it refuses (throws,
// naming the file) when a guard file is missing or unreadable or the spec
// would start the CLI unguarded, gives claude's spec the check that answers
// its hooks and pi's environment the session's guard policy, and wraps the
// spec in bubblewrap when that is the OS wall (in the container: in setpriv,
// to run the CLI under its own uid; uid-drop.ts).
import { constants } from 'node:fs';
import { access, chmod, lstat, readlink, realpath, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CLAUDE_DEFAULT_TOOLS,
  PI_DEFAULT_TOOLS,
  type Backend,
  type SpawnOptions,
  type SpawnSpec,
} from '@switchyard/protocol';
import type { PreparedSpawn } from '../cli/spawn.ts';
import { ETC_ALLOW, SYSTEM_PATHS, wrapWithBwrap, type HostEntry } from './bwrap.ts';
import { cliFsView } from './cli-view.ts';
import { policyEnv, type GuardPolicy } from './guard/policy.ts';
import { decide } from './guard/rules.ts';
import { CLI_UID, missingRunnerCaps, wrapWithUidDrop } from './uid-drop.ts';

/** Where the guard module lives; the runner ships it, pi loads it from here (never a copy). */
export const GUARD_DIR = join(dirname(fileURLToPath(import.meta.url)), 'guard');
/**
 * The guard module's files, which pi's extension loads. All must be readable before any CLI is
 * spawned: an install missing one is broken, whichever CLI it starts.
 */
const GUARD_FILES = ['pi-extension.ts', 'rules.ts', 'policy.ts', 'resolve.ts', 'sensitive-paths.ts'] as const;

/**
 * Preloaded into pi, which imports its guard extension natively (docs/DESIGN.md "The guard"). It
 * serves the guard's modules from the strip cache, so pi does not load Node's TypeScript
 * stripper. A preload that cannot load fails pi, which then does not start.
 */
const GUARD_PRELOAD = fileURLToPath(new URL('../../bin/strip-cache-preload.js', import.meta.url));

/**
 * The OS wall around the CLI. `bubblewrap`: local runs, the runner wraps the
 * CLI itself. `container`: production, the per-session container is the wall
 * (runner/Dockerfile) and the CLI is spawned under its own uid (uid-drop.ts). `none`: no wall at all;
 * only for explicitly unsafe debugging, never a default.
 */
export type SandboxMode = 'bubblewrap' | 'container' | 'none';
const SANDBOX_MODES: readonly SandboxMode[] = ['bubblewrap', 'container', 'none'];

export class SandboxError extends Error {
  readonly code: 'guard_missing' | 'sandbox_unavailable';
  constructor(code: 'guard_missing' | 'sandbox_unavailable', message: string) {
    super(message);
    this.name = 'SandboxError';
    this.code = code;
  }
}

export interface SandboxConfig {
  mode: SandboxMode;
  /** The tool-call guard. Off only in tests' control runs. */
  guard?: boolean;
  /** pi's guard extension's directory. Tests point this at a broken copy to prove the fail-closed paths. */
  guardDir?: string;
  bwrap?: string;
  /** bubblewrap with a model route: the socat that relays the model URL inside the CLI's network namespace. */
  socat?: string;
  /**
   * Container mode: the util-linux setpriv that starts the CLI as `cliUid`; bubblewrap with a model
   * route: the one that starts socat with a parent-death signal.
   */
  setpriv?: string;
  /** Container mode: the CLI's uid (its group is the runner's own gid, shared). */
  cliUid?: number;
}

export interface SessionPaths {
  backend: Backend;
  workspace: string;
  home: string;
  configDir: string;
  /** The allowedTools given to the adapter (absent: the adapter's default set). */
  tools?: string[] | undefined;
  /**
   * bubblewrap: the credential proxy's unix socket (model-proxy.ts), the CLI's only way out of
   * its network namespace. Absent: the CLI has no network at all.
   */
  modelSocket?: string | undefined;
}

export class Sandbox {
  readonly mode: SandboxMode;
  readonly guardEnabled: boolean;
  readonly guardDir: string;
  private readonly bwrap: string;
  private readonly socat: string;
  private readonly setpriv: string;
  private readonly cliUid: number;

  constructor(config: SandboxConfig) {
    this.mode = config.mode;
    this.guardEnabled = config.guard ?? true;
    this.guardDir = config.guardDir ?? GUARD_DIR;
    this.bwrap = config.bwrap ?? '/usr/bin/bwrap';
    this.socat = config.socat ?? '/usr/bin/socat';
    this.setpriv = config.setpriv ?? '/usr/bin/setpriv';
    this.cliUid = config.cliUid ?? CLI_UID;
  }

  /** The extension pi loads its guard from. */
  get piExtension(): string {
    return join(this.guardDir, 'pi-extension.ts');
  }

  /** For SpawnOptions.guard: claude's hooks are the runner's to answer; pi loads the extension. */
  guardOption(backend: Backend): SpawnOptions['guard'] {
    if (!this.guardEnabled) return undefined;
    return backend === 'claude' ? 'runner' : { file: this.piExtension, preload: GUARD_PRELOAD };
  }

  /** Throws SandboxError naming the first guard file that cannot be read. */
  async checkGuardFiles(): Promise<void> {
    for (const file of GUARD_FILES.map((name) => join(this.guardDir, name))) {
      try {
        await access(file, constants.R_OK);
        if (!(await stat(file)).isFile()) throw new Error('not a regular file');
      } catch (err) {
        throw new SandboxError(
          'guard_missing',
          `guard file ${file} is missing or unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the CLI is not started without its guard`,
        );
      }
    }
  }

  /** bubblewrap, and socat and setpriv when the CLI gets a model route: each missing one is named. */
  private async checkWallTools(modelRoute: boolean): Promise<void> {
    const needed = [{ path: this.bwrap, what: `bubblewrap (${this.bwrap})` }];
    if (modelRoute) {
      needed.push({ path: this.socat, what: `socat (${this.socat}, the model route's relay)` });
      needed.push({ path: this.setpriv, what: `setpriv (${this.setpriv}, util-linux: ties the relay to the CLI)` });
    }
    for (const { path, what } of needed) {
      try {
        await access(path, constants.X_OK);
      } catch {
        throw new SandboxError(
          'sandbox_unavailable',
          `${what} is not installed; run scripts/setup-system.sh, or set SWITCHYARD_SANDBOX=container inside the production container`,
        );
      }
    }
  }

  policy(paths: SessionPaths): GuardPolicy {
    const tools = paths.tools ?? (paths.backend === 'claude' ? CLAUDE_DEFAULT_TOOLS : PI_DEFAULT_TOOLS);
    return { v: 1, backend: paths.backend, workspace: paths.workspace, tools: [...tools] };
  }

  /** The last step before spawning. Fails closed: every problem throws and nothing is spawned. */
  async prepare(spec: SpawnSpec, paths: SessionPaths): Promise<PreparedSpawn> {
    let out: SpawnSpec = spec;
    let checkTool: PreparedSpawn['checkTool'];
    if (this.guardEnabled) {
      await this.checkGuardFiles();
      const policy = this.policy(paths);
      if (paths.backend === 'claude') {
        if (spec.toolHooks === undefined)
          throw new SandboxError(
            'guard_missing',
            'the spawn spec registers no guard hooks for claude; pass guardOption() to the adapter',
          );
        const mode = this.mode;
        // In the container the CLI runs as cliUid in the runner's group (dropUid).
        const cli = { uid: this.cliUid, gid: process.getgid?.() ?? 0 };
        checkTool = (call, cliPid) => decide(call, policy, cliFsView(mode, cliPid, cli));
      } else {
        if (!spec.args.includes(this.piExtension))
          throw new SandboxError(
            'guard_missing',
            `the spawn spec does not load the guard ${this.piExtension}; pass guardOption() to the adapter`,
          );
        out = { ...out, env: { ...out.env, ...policyEnv(policy) } };
      }
    }
    if (this.mode === 'bubblewrap') {
      await this.checkWallTools(paths.modelSocket !== undefined);
      out = wrapWithBwrap(out, {
        bwrap: this.bwrap,
        uid: process.getuid?.() ?? 0,
        writable: [paths.workspace, paths.home, paths.configDir],
        readOnly: await this.readOnlyRoots(spec, paths.backend),
        readOnlyFiles: spec.files.map((f) => f.path),
        ...(await hostLayout()),
        ...(paths.modelSocket !== undefined && {
          model: { socket: paths.modelSocket, socat: this.socat, setpriv: this.setpriv },
        }),
      });
    } else if (this.mode === 'container') {
      out = await this.dropUid(out, paths);
    }
    return checkTool === undefined ? out : { ...out, checkTool };
  }

  /**
   * Container mode: the CLI runs as `cliUid` in the runner's group, so it cannot
   * read the runner's or PID 1's environ. Needs CAP_SETUID, CAP_SETGID, CAP_KILL
   * and CAP_DAC_OVERRIDE (the image's entrypoint gives the runner exactly
   * these); without them nothing is spawned. Opens the session dirs to the shared group.
   */
  private async dropUid(spec: SpawnSpec, paths: SessionPaths): Promise<SpawnSpec> {
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const missing = await missingRunnerCaps();
    if (missing.length > 0) {
      throw new SandboxError(
        'sandbox_unavailable',
        `SWITCHYARD_SANDBOX=container starts the CLI as uid ${this.cliUid}, but the runner lacks ${missing.join(', ')}; run it through the image's entrypoint (runner/Dockerfile)`,
      );
    }
    if (uid === 0 || uid === this.cliUid)
      throw new SandboxError(
        'sandbox_unavailable',
        `SWITCHYARD_SANDBOX=container: the runner must run as its own non-root uid, not ${uid}`,
      );
    try {
      await access(this.setpriv, constants.X_OK);
    } catch {
      throw new SandboxError(
        'sandbox_unavailable',
        `setpriv (${this.setpriv}, util-linux) is not installed; the container mode cannot start the CLI under its own uid`,
      );
    }
    for (const dir of [paths.workspace, paths.home, paths.configDir]) await shareWithGroup(dir, uid);
    // The files the runner writes for the CLI (pi's models.json is 0600): the owner's rights go to the group too.
    const files = spec.files.map((f) => (f.mode === undefined ? f : { ...f, mode: modeForCli('container', f.mode) }));
    return wrapWithUidDrop({ ...spec, files }, { setpriv: this.setpriv, uid: this.cliUid, gid });
  }

  /**
   * What the CLI must see read-only: its installation (the whole node_modules it lives in), node,
   * pi's guard, and Node's compile cache if it has one (read-only: code in it runs unchecked).
   */
  private async readOnlyRoots(spec: SpawnSpec, backend: Backend): Promise<string[]> {
    const files = [spec.command, ...spec.args.slice(0, 1)];
    const roots: string[] = [];
    for (const f of files) {
      if (!f.startsWith('/')) continue;
      try {
        if (!(await stat(f)).isFile()) continue;
      } catch {
        continue;
      }
      roots.push(installRoot(f));
    }
    if (this.guardEnabled && backend === 'pi') roots.push(this.guardDir, dirname(GUARD_PRELOAD));
    const compileCache = spec.env.NODE_COMPILE_CACHE;
    if (compileCache !== undefined && (await isDirectory(compileCache))) roots.push(compileCache);
    return roots.filter((r) => !SYSTEM_PATHS.some((s) => r === s || r.startsWith(`${s}/`)));
  }
}

/**
 * Makes `dir` group-rw and every ancestor this uid owns group-traversable, so the CLI (another
 * uid, the same group) can use it. Not what is inside: the runner makes what it puts there with
 * the group's rights already (`modeForCli`), and its umask is 007 in container mode, so what
 * either creates later stays shared. A walk inside, by path, would follow a folder the CLI swapped
 * for a link, and chmod the runner's own state where it points.
 */
async function shareWithGroup(dir: string, uid: number): Promise<void> {
  const st = await lstat(dir);
  if (st.uid === uid && !st.isSymbolicLink() && (st.mode & 0o070) !== 0o070)
    await chmod(dir, (st.mode & 0o7777) | 0o070);
  for (let p = dirname(dir); p !== dirname(p); p = dirname(p)) {
    const up = await stat(p);
    if (up.uid === uid && (up.mode & 0o010) === 0) await chmod(p, (up.mode & 0o7777) | 0o010);
  }
}

/**
 * The mode a file or folder the runner makes for its CLI gets (a restored transcript or workspace
 * file, a config file): in container mode the CLI is another uid in the runner's group, which gets
 * the owner's rights; otherwise the mode as given.
 */
export function modeForCli(sandbox: SandboxMode, mode: number): number {
  return sandbox === 'container' ? mode | ((mode & 0o700) >> 3) : mode;
}

/** Whether `path` is a directory (a missing one, which bubblewrap could not bind, is not). */
async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isDirectory(),
    () => false,
  );
}

/** The node_modules directory a file lives in, or its own directory. */
export function installRoot(file: string): string {
  const parts = file.split(sep);
  const i = parts.lastIndexOf('node_modules');
  return i > 0 ? parts.slice(0, i + 1).join(sep) : dirname(file);
}

/** What one path is on this host; a symlink with its realpath. */
async function hostEntry(path: string): Promise<HostEntry> {
  try {
    const st = await lstat(path);
    if (st.isSymbolicLink()) {
      const target = await readlink(path);
      const resolved = await realpath(path).catch(() => undefined);
      return { kind: 'symlink', target, ...(resolved !== undefined && { resolved }) };
    }
    return st.isDirectory() ? { kind: 'dir' } : { kind: 'file' };
  } catch {
    return { kind: 'missing' };
  }
}

export interface HostLayout {
  /** /usr, /bin, /lib... (merged-/usr Debian: all but /usr are symlinks). */
  system: Record<string, HostEntry>;
  /** The ETC_ALLOW entries of /etc, by path. */
  etc: Record<string, HostEntry>;
}

let layoutCache: Promise<HostLayout> | undefined;

/** What the system paths and the allowed /etc entries are on this host; read once per process. */
export function hostLayout(): Promise<HostLayout> {
  layoutCache ??= (async () => {
    const entries = async (paths: string[]) =>
      Object.fromEntries(await Promise.all(paths.map(async (p) => [p, await hostEntry(p)] as const)));
    const [system, etc] = await Promise.all([entries(SYSTEM_PATHS), entries(ETC_ALLOW.map((n) => `/etc/${n}`))]);
    return { system, etc };
  })();
  return layoutCache;
}

/** SWITCHYARD_SANDBOX, default bubblewrap. */
export function sandboxModeFrom(env: Record<string, string | undefined>): SandboxMode | { error: string } {
  const v = env.SWITCHYARD_SANDBOX;
  if (v === undefined || v === '') return 'bubblewrap';
  return (SANDBOX_MODES as readonly string[]).includes(v)
    ? (v as SandboxMode)
    : { error: `SWITCHYARD_SANDBOX must be one of ${SANDBOX_MODES.join(', ')}` };
}
