// The one way the runner builds a CLI's spawn: the workspace is checked for configuration the CLI
// would read from it at start (sandbox/project-config.ts), protocol's adapter writes the spec
// (argv, env, config files), then the sandbox prepares it (the guard policy into the environment,
// the OS wall around the command), and CliProcess (cli-process.ts) runs the result. serve, once, probe
// and the guard canary all spawn through here, so the probe checks what serve will start.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  adapterFor,
  type Backend,
  type SpawnOptions,
  type SpawnSpec,
  type ToolCall,
  type ToolVerdict,
} from '@switchyard/protocol';
import { StepFailure } from '../errors.ts';
import { projectConfigRefusal } from '../sandbox/project-config.ts';
import type { SessionPaths } from '../sandbox/sandbox.ts';
import type { CliExecutable } from './locate.ts';

/** The CLI's directories: its cwd (the workspace), its private HOME and its config dir. */
export interface CliDirs {
  workspace: string;
  home: string;
  configDir: string;
}

/**
 * A spec ready to spawn. `checkTool` answers the guard's tool-call hooks (`toolHooks`, claude): it
 * decides one call by what is at its paths as the CLI sees them, hence the CLI's process id.
 */
export type PreparedSpawn = SpawnSpec & { checkTool?: (call: ToolCall, cliPid: number) => ToolVerdict };

/** The two walls as a spawn needs them: `SandboxSetup` (capabilities.ts), or a bare Sandbox's. */
export interface SpawnWalls {
  guard(backend: Backend): SpawnOptions['guard'];
  /** Throws, naming why, when the CLI must not start (the guard missing or failing its self-test). */
  prepare(spec: SpawnSpec, paths: SessionPaths): Promise<PreparedSpawn>;
}

/** What is the same for every CLI one runner command starts. */
export interface CliLaunch {
  backend: Backend;
  executable: CliExecutable;
  dirs: CliDirs;
  /** The credential proxy the CLI talks to; `socketPath` under bubblewrap. */
  model: { baseUrl: string; apiKey: string; socketPath?: string | undefined };
  walls: SpawnWalls;
  /** The configured model name; undefined: the CLI's default. */
  modelName: string | undefined;
  /**
   * The CLI's retry policy for provider errors; undefined: the CLI's own. Not optional, so no
   * caller can drop the configured policy by leaving it out: each one says what it spawns with.
   */
  retry: SpawnOptions['retry'];
  /** Node's compile cache for a CLI that runs on Node (SWITCHYARD_CLI_COMPILE_CACHE); undefined: none. */
  compileCache: string | undefined;
  /** The runner's environment; the adapter copies only allow-listed names into the CLI's. */
  baseEnv: Record<string, string | undefined>;
}

/** What may differ between two spawns of one launch: one-shot mode, a resume handle, approvals. */
export type SpawnChoices = Omit<SpawnOptions, keyof FixedOptions>;
type FixedOptions = Pick<
  SpawnOptions,
  | 'executable'
  | 'workspace'
  | 'home'
  | 'configDir'
  | 'modelBaseUrl'
  | 'modelApiKey'
  | 'model'
  | 'guard'
  | 'retry'
  | 'compileCache'
  | 'baseEnv'
>;

/**
 * The spec to start one CLI with. Rejects when the workspace holds configuration the CLI would
 * read at start, the adapter refuses the options or the sandbox the spawn.
 */
export async function cliSpawnSpec(launch: CliLaunch, choices: SpawnChoices = {}): Promise<PreparedSpawn> {
  const { backend, dirs, model } = launch;
  const refused = await projectConfigRefusal(backend, dirs.workspace);
  if (refused !== null) throw new StepFailure(refused);
  const spec = adapterFor(backend).spawnSpec({
    ...choices,
    executable: launch.executable,
    ...dirs,
    modelBaseUrl: model.baseUrl,
    modelApiKey: model.apiKey,
    ...(launch.modelName !== undefined && { model: launch.modelName }),
    ...(launch.retry !== undefined && { retry: launch.retry }),
    ...(launch.compileCache !== undefined && { compileCache: launch.compileCache }),
    guard: launch.walls.guard(backend),
    baseEnv: launch.baseEnv,
  });
  return launch.walls.prepare(spec, {
    backend,
    ...dirs,
    tools: choices.allowedTools,
    modelSocket: model.socketPath,
  });
}

/**
 * Creates the CLI's directories: HOME and the config dir private (0700) under `stateDir`, and
 * the workspace, either the session's as given or a private one under `stateDir`.
 */
export async function makeCliDirs(stateDir: string, workspace?: string): Promise<CliDirs> {
  const dirs = {
    workspace: workspace ?? join(stateDir, 'ws'),
    home: join(stateDir, 'home'),
    configDir: join(stateDir, 'cli'),
  };
  await mkdir(dirs.workspace, workspace === undefined ? { recursive: true, mode: 0o700 } : { recursive: true });
  await mkdir(dirs.home, { recursive: true, mode: 0o700 });
  await mkdir(dirs.configDir, { recursive: true, mode: 0o700 });
  return dirs;
}
