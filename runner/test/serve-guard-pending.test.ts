import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { locateCli } from '../src/cli/locate.ts';
import { makeCliDirs, type SpawnWalls } from '../src/cli/spawn.ts';
import { loadServeConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { type CanaryResult, guardSelfTest } from '../src/sandbox/canary.ts';
import { GUARD_DIR, Sandbox, SandboxError } from '../src/sandbox/sandbox.ts';
import { SessionRunner } from '../src/serve/session-runner.ts';
import { groupMembers } from './contract/runner-process.ts';
import { TestHub } from './contract/test-hub.ts';

// A fresh session's real claude is spawned before the guard's self-test starts (docs/DESIGN.md
// "The guard"). Here the self-test is run against a copy of the guard with a file missing, so it
// fails after the CLI process (spawned with the intact guard) exists. Everything written to the
// CLI's stdin is recorded by a `tee` in front of it.

let hub: TestHub;
const dirs: string[] = [];
beforeAll(async () => {
  hub = await TestHub.start();
});
afterAll(async () => {
  await hub?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('claude started during a failing guard self-test', () => {
  test('its stdin gets nothing (no handshake, no message), it is killed, and the runner carries on as one whose guard failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-guard-pending-'));
    dirs.push(dir);
    const guardDir = join(dir, 'guard');
    cpSync(GUARD_DIR, guardDir, { recursive: true });
    rmSync(join(guardDir, 'sensitive-paths.ts'));
    const sandbox = new Sandbox({ mode: 'none' });
    const broken = new Sandbox({ mode: 'none', guardDir });
    const stdinLog = join(dir, 'stdin.log');
    writeFileSync(stdinLog, '');

    const pids: number[] = [];
    let failed = false;
    // The real self-test, noting each time the runner asks for it and whether its CLI had started.
    const calls: Array<{ cliStarted: boolean }> = [];
    let ran!: (result: Promise<CanaryResult>) => void;
    const selfTestRan = new Promise<CanaryResult>((resolve) => {
      ran = resolve;
    });
    const selfTest = (): Promise<CanaryResult> => {
      calls.push({ cliStarted: pids.length > 0 });
      const result = guardSelfTest(broken, ['claude']).then((r) => {
        failed = !r.ok;
        return r;
      });
      ran(result);
      return result;
    };
    const walls: SpawnWalls = {
      guard: (backend) => sandbox.guardOption(backend),
      // What capabilities.ts's walls do: refuse once the self-test failed, not while it runs.
      prepare: async (spec, paths) => {
        if (failed) throw new SandboxError('guard_missing', 'the tool-call guard failed its self-test');
        const ready = await sandbox.prepare(spec, paths);
        return {
          ...ready,
          command: '/bin/sh',
          args: ['-c', 'tee -a "$0" | "$@"', stdinLog, ready.command, ...ready.args],
        };
      },
    };

    const session = await hub.newSession();
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
    const logs: Array<{ msg: string; [k: string]: unknown }> = [];
    const runner = new SessionRunner({
      config: loaded.value,
      log: createLogger({
        level: 'info',
        write: (line) => {
          const entry = JSON.parse(line) as { msg: string; pid?: number };
          logs.push(entry);
          if (entry.msg === 'cli started' && entry.pid !== undefined) pids.push(entry.pid);
        },
      }),
      capabilities: { guard: 'missing', sandbox: 'none' },
      selfTest,
      launch: {
        backend: 'claude',
        executable: locateCli('claude'),
        dirs: await makeCliDirs(join(dir, 'state'), join(dir, 'ws')),
        model: { baseUrl: 'http://127.0.0.1:9', apiKey: 'test-key' },
        walls,
        modelName: undefined,
        retry: undefined,
        compileCache: undefined,
        baseEnv: { PATH: process.env.PATH },
      },
    });
    const exit = runner.run();

    expect(await selfTestRan).toMatchObject({ ok: false });
    expect(calls).toEqual([{ cliStarted: true }]);
    await session.waitFor(() => session.hellos().length === 1, 'the hello');
    // The hub is told, as when the self-test failed before any spawn.
    expect(session.hellos()[0]?.capabilities.guard).toBe('missing');
    await session.waitFor(
      () => logs.some((l) => l.msg === 'cli exit' && l.gen === 1 && l.signal === 'SIGKILL'),
      'the early CLI killed',
    );
    expect(logs.some((l) => l.msg === 'the tool-call guard failed its self-test; no CLI will be started')).toBe(true);
    expect(logs.some((l) => l.msg === 'cli ready')).toBe(false);
    expect(pids).toHaveLength(1);
    // Its whole group, claude included, not only the shell in front of it (zombies not counted).
    await session.waitFor(() => groupMembers(pids[0] ?? 0).length === 0, 'the CLI group gone');

    // The welcome's CLI is refused, as it is for any runner whose guard failed; a message reaches no CLI.
    await session.waitFor(
      () => session.events().some((e) => e.event.type === 'error' && e.event.message.includes('guard')),
      'the refused spawn reported',
    );
    const { reply } = await session.sendMessage('must never reach a CLI');
    expect(reply).toEqual({ accepted: true });
    await session.waitFor(() => session.events().some((e) => e.event.type === 'turn.done'), 'the turn ended');
    expect(session.statuses().some((s) => s.state === 'ready' && s.cli === 'running')).toBe(false);
    expect(readFileSync(stdinLog, 'utf8')).toBe('');

    runner.shutdown('signal');
    await exit;
  }, 60_000);
});
