import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Capabilities } from '@switchyard/protocol';
import { makeCliDirs, type SpawnWalls } from '../src/cli/spawn.ts';
import { loadServeConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { SandboxError } from '../src/sandbox/sandbox.ts';
import { SessionRunner } from '../src/serve/session-runner.ts';
import { TestHub } from './contract/test-hub.ts';

// A fresh session's CLI starts before the welcome only when the guard passed its self-test
// (docs/DESIGN.md "Runner behaviour (serve)"). The runner runs in this process against the test
// hub, which holds its welcome; the walls record every spawn the runner prepares (the last step
// before any CLI exists) and refuse it as the real ones do when the guard is missing.

let hub: TestHub;
const dirs: string[] = [];
beforeAll(async () => {
  hub = await TestHub.start();
});
afterAll(async () => {
  await hub?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function freshRunner(guard: Capabilities['guard']) {
  const session = await hub.newSession();
  hub.faults.holdWelcome(session.sessionId, true);
  const dir = mkdtempSync(join(tmpdir(), 'sy-fresh-guard-'));
  dirs.push(dir);
  const loaded = loadServeConfig(
    {
      ...session.runnerEnv,
      SWITCHYARD_BACKEND: 'claude',
      SWITCHYARD_FRESH_SESSION: '1',
      SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9/v1',
      SWITCHYARD_SHUTDOWN_DEADLINE: '2s',
    },
    dir,
  );
  if (!loaded.ok) throw new Error(loaded.error.message);
  const prepared: number[] = [];
  const walls: SpawnWalls = {
    guard: () => undefined,
    prepare: async () => {
      prepared.push(Date.now());
      throw new SandboxError('guard_missing', 'the tool-call guard failed its self-test, so no CLI is started');
    },
  };
  const logLines: string[] = [];
  const runner = new SessionRunner({
    config: loaded.value,
    log: createLogger({ level: 'info', write: (l) => logLines.push(l) }),
    capabilities: { guard, sandbox: 'none' },
    launch: {
      backend: 'claude',
      executable: { command: '/bin/false', prefixArgs: [], version: 'test' },
      dirs: await makeCliDirs(join(dir, 'state'), join(dir, 'ws')),
      model: { baseUrl: 'http://127.0.0.1:9', apiKey: 'test-key' },
      walls,
      modelName: undefined,
      retry: undefined,
      compileCache: undefined,
      baseEnv: {},
    },
  });
  const exit = runner.run();
  await session.waitFor(() => session.hellos().length === 1, 'the hello');
  // Everything the runner does before its hello is synchronous or a few promise steps; the hello
  // needs a socket round trip, so a spawn started before the welcome has been prepared by now.
  const beforeWelcome = prepared.length;
  hub.faults.holdWelcome(session.sessionId, false);
  await session.waitFor(
    () => session.events().some((e) => e.event.type === 'error' && e.event.message.includes('guard')),
    'the refused spawn reported',
  );
  runner.shutdown('signal');
  await exit;
  return { beforeWelcome, logLines };
}

describe('fresh session and the guard', () => {
  test('guard missing: nothing is prepared before the welcome; the spawn after it is refused and reported', async () => {
    const { beforeWelcome, logLines } = await freshRunner('missing');
    expect(beforeWelcome).toBe(0);
    expect(logLines.some((l) => l.includes('fresh session: starting the CLI'))).toBe(false);
  });

  test('guard loaded: the same runner prepares its CLI before the welcome (what the case above rules out)', async () => {
    const { beforeWelcome, logLines } = await freshRunner('loaded');
    expect(beforeWelcome).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes('fresh session: starting the CLI'))).toBe(true);
  });
});
