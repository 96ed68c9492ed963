import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OfflineModel, startOfflineModel } from '@switchyard/offline-model';
import { locateCli } from '../src/cli/locate.ts';
import { makeCliDirs } from '../src/cli/spawn.ts';
import { loadServeConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { Sandbox } from '../src/sandbox/sandbox.ts';
import { SessionRunner } from '../src/serve/session-runner.ts';
import { waitTurnDone } from './contract/fixture.ts';
import { TestHub } from './contract/test-hub.ts';

// Each message the runner writes to its CLI tells the model proxy that a call is coming
// (`modelCallComing`), so the proxy can open the call's upstream connection while the CLI builds
// it (credential-proxy.ts `prepareCall`; docs/DESIGN.md "Runner behaviour (serve)"). The runner
// runs in this process with the real pi and the offline model, so the notice is seen in the same
// tick as the write: before the CLI could have made the call.

let hub: TestHub;
let model: OfflineModel;
const dirs: string[] = [];
beforeAll(async () => {
  hub = await TestHub.start();
  model = await startOfflineModel();
});
afterAll(async () => {
  await hub?.close();
  await model?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a message written to the CLI', () => {
  test('is followed by modelCallComing, once per message, before its model call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-model-call-'));
    dirs.push(dir);
    const session = await hub.newSession();
    const loaded = loadServeConfig(
      {
        ...session.runnerEnv,
        SWITCHYARD_BACKEND: 'pi',
        SWITCHYARD_MODEL_URL: model.url,
        SWITCHYARD_SHUTDOWN_DEADLINE: '2s',
      },
      dir,
    );
    if (!loaded.ok) throw new Error(loaded.error.message);
    const sandbox = new Sandbox({ mode: 'none' });
    // The model's Messages calls so far, each time the runner says a call is coming.
    const callsBefore: number[] = [];
    const runner = new SessionRunner({
      config: loaded.value,
      log: createLogger({ level: 'warn', write: () => undefined }),
      capabilities: { guard: 'loaded', sandbox: 'none' },
      launch: {
        backend: 'pi',
        executable: locateCli('pi'),
        dirs: await makeCliDirs(join(dir, 'state'), join(dir, 'ws')),
        model: { baseUrl: model.url, apiKey: 'offline-dummy-key' },
        walls: {
          guard: (backend) => sandbox.guardOption(backend),
          prepare: (spec, paths) => sandbox.prepare(spec, paths),
        },
        modelName: undefined,
        retry: undefined,
        baseEnv: { PATH: process.env.PATH },
      },
      modelCallComing: () => callsBefore.push(model.requests().filter((r) => r.path === '/v1/messages').length),
    });
    const exit = runner.run();
    for (const text of ['first', 'second']) {
      const { messageId, reply } = await session.sendMessage(text);
      expect(reply, JSON.stringify(reply)).toMatchObject({ accepted: true });
      expect(await waitTurnDone(session, messageId)).not.toHaveProperty('error');
    }
    expect(callsBefore).toEqual([0, 1]);
    runner.shutdown('signal');
    await exit;
  });
});
