import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApprovalMode, Backend } from '@switchyard/protocol';
import { locateCli } from '../../src/cli/locate.ts';
import { makeCliDirs } from '../../src/cli/spawn.ts';
import { loadServeConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { Sandbox } from '../../src/sandbox/sandbox.ts';
import { SessionRunner, type SessionRunnerOptions } from '../../src/serve/session-runner.ts';
import type { TestHub } from './test-hub.ts';

// A session runner in the calling process (no sandbox, no credential proxy: the CLI calls
// `modelUrl` itself), for a new session of `hub`: what a test or bench observes through the
// runner's options sees each callback in the same tick as the runner acts.

export async function startInProcessRunner(
  hub: TestHub,
  o: {
    backend: Backend;
    modelUrl: string;
    /** What the CLI presents to `modelUrl` (a credential proxy's session key). */
    apiKey?: string;
    approvals?: ApprovalMode;
    options?: Pick<SessionRunnerOptions, 'modelCallComing'>;
  },
) {
  const dir = mkdtempSync(join(tmpdir(), 'sy-in-process-'));
  const session = await hub.newSession();
  session.approvals = o.approvals;
  const loaded = loadServeConfig(
    {
      ...session.runnerEnv,
      SWITCHYARD_BACKEND: o.backend,
      SWITCHYARD_MODEL_URL: o.modelUrl,
      SWITCHYARD_SHUTDOWN_DEADLINE: '2s',
    },
    dir,
  );
  if (!loaded.ok) throw new Error(loaded.error.message);
  const sandbox = new Sandbox({ mode: 'none' });
  const runner = new SessionRunner({
    config: loaded.value,
    log: createLogger({ level: 'error', write: () => undefined }),
    capabilities: { guard: 'loaded', sandbox: 'none' },
    launch: {
      backend: o.backend,
      executable: locateCli(o.backend),
      dirs: await makeCliDirs(join(dir, 'state'), join(dir, 'ws')),
      model: { baseUrl: o.modelUrl, apiKey: o.apiKey ?? 'offline-dummy-key' },
      walls: {
        guard: (backend) => sandbox.guardOption(backend),
        prepare: (spec, paths) => sandbox.prepare(spec, paths),
      },
      modelName: undefined,
      retry: undefined,
      compileCache: undefined,
      baseEnv: { PATH: process.env.PATH },
    },
    ...o.options,
  });
  const exit = runner.run();
  const stop = async () => {
    runner.shutdown('signal');
    await exit;
    rmSync(dir, { recursive: true, force: true });
  };
  return { session, stop };
}
