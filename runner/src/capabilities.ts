import type { Backend, Capabilities, SpawnOptions, SpawnSpec } from '@switchyard/protocol';
import type { PreparedSpawn } from './cli/spawn.ts';
import { runnerError, type Result } from './errors.ts';
import { type CanaryResult, guardSelfTest } from './sandbox/canary.ts';
import { Sandbox, SandboxError, sandboxModeFrom, type SessionPaths } from './sandbox/sandbox.ts';

/**
 * The two walls around the CLI (runner/src/sandbox, DESIGN "Sandbox"): the
 * tool-call guard and the OS wall (bubblewrap locally, the container in
 * production, chosen by SWITCHYARD_SANDBOX). Built once per runner process;
 * the guard's self-test runs here, so `hello` reports what was proven: for
 * `backends`, the ones this runner may start (serve and once: its one backend).
 */
export interface SandboxSetup {
  capabilities: Capabilities;
  /** For the adapter's spawnSpec (claude: the runner answers its hooks; pi: its -e extension). */
  guard(backend: Backend): SpawnOptions['guard'];
  /**
   * The last step before every spawn: policy into the CLI's environment (pi) or the check that
   * answers its hooks (claude), the bubblewrap wrap. Throws (naming the file or the reason) when the guard is
   * missing or failed its self-test: the CLI is then never started.
   */
  prepare(spec: SpawnSpec, paths: SessionPaths): Promise<PreparedSpawn>;
  sandbox: Sandbox;
}

export async function sandboxSetup(
  env: Record<string, string | undefined>,
  backends: readonly Backend[],
): Promise<Result<SandboxSetup>> {
  const walls = sandboxWalls(env, backends);
  if (!walls.ok) return walls;
  const selfTest = await walls.value.selfTest();
  return {
    ok: true,
    value: {
      ...walls.value,
      capabilities: { ...walls.value.capabilities, guard: selfTest.ok ? 'loaded' : 'missing' },
    },
  };
}

/**
 * The same walls with the guard's self-test not yet run: `selfTest()` starts it (once; later calls
 * share it). serve starts it at once, except for a fresh session, whose CLI is spawned first and
 * gets no input until it passed. `capabilities.guard` says `missing` until proven; `prepare`
 * refuses once the self-test failed, and lets a spawn through before — the runner holds that
 * CLI's input and kills it if the self-test fails (serve/turn-machine.ts).
 */
export function sandboxWalls(
  env: Record<string, string | undefined>,
  backends: readonly Backend[],
): Result<SandboxSetup & { selfTest: () => Promise<CanaryResult> }> {
  const mode = sandboxModeFrom(env);
  if (typeof mode !== 'string') return { ok: false, error: runnerError('config_invalid', mode.error) };
  // Container mode: the CLI is another uid in the runner's group; whatever either creates stays group-rw.
  if (mode === 'container') process.umask(0o007);
  const sandbox = new Sandbox({ mode });
  let failed: string | undefined;
  let running: Promise<CanaryResult> | undefined;
  const selfTest = () =>
    (running ??= guardSelfTest(sandbox, backends).then((result) => {
      if (!result.ok) failed = result.problem;
      return result;
    }));
  return {
    ok: true,
    value: {
      capabilities: { guard: 'missing', sandbox: mode },
      guard: (backend) => sandbox.guardOption(backend),
      prepare: async (spec, paths) => {
        if (failed !== undefined)
          throw new SandboxError(
            'guard_missing',
            `the tool-call guard failed its self-test, so no CLI is started: ${failed}`,
          );
        return sandbox.prepare(spec, paths);
      },
      sandbox,
      selfTest,
    },
  };
}
