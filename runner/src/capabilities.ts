import type { Backend, Capabilities, SpawnOptions, SpawnSpec } from '@switchyard/protocol';
import { runnerError, type Result } from './errors.ts';
import { guardSelfTest } from './sandbox/canary.ts';
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
  /** For the adapter's spawnSpec (claude PreToolUse hook / pi -e extension). */
  guard(backend: Backend): SpawnOptions['guard'];
  /**
   * The last step before every spawn: policy into the CLI's environment, the
   * bubblewrap wrap. Throws (naming the file or the reason) when the guard is
   * missing or failed its self-test: the CLI is then never started.
   */
  prepare(spec: SpawnSpec, paths: SessionPaths): Promise<SpawnSpec>;
  sandbox: Sandbox;
}

export async function sandboxSetup(
  env: Record<string, string | undefined>,
  backends: readonly Backend[],
): Promise<Result<SandboxSetup>> {
  const mode = sandboxModeFrom(env);
  if (typeof mode !== 'string') return { ok: false, error: runnerError('config_invalid', mode.error) };
  // Container mode: the CLI is another uid in the runner's group; whatever either creates stays group-rw.
  if (mode === 'container') process.umask(0o007);
  const sandbox = new Sandbox({ mode });
  const selfTest = await guardSelfTest(sandbox, backends);
  return {
    ok: true,
    value: {
      capabilities: { guard: selfTest.ok ? 'loaded' : 'missing', sandbox: mode },
      guard: (backend) => sandbox.guardOption(backend),
      prepare: async (spec, paths) => {
        if (!selfTest.ok)
          throw new SandboxError(
            'guard_missing',
            `the tool-call guard failed its self-test, so no CLI is started: ${selfTest.problem}`,
          );
        return sandbox.prepare(spec, paths);
      },
      sandbox,
    },
  };
}
