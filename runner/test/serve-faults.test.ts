import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { RunnerCloseCode } from '@switchyard/protocol';
import {
  exitWithin,
  serveRunner,
  slowText,
  stopRunner,
  turnDones,
  waitEvent,
  waitGroupGone,
  waitReady,
  waitTurnDone,
  type Served,
} from './contract/fixture.ts';
import { listProcs } from '../src/host/process-tree.ts';
import { runnerSuite } from './contract/suite.ts';
import { until } from '../../test/helpers/poll.ts';
import { TestHub } from './contract/test-hub.ts';

// Failure paths a real CLI does not produce on demand, driven by a fake CLI
// that speaks pi's rpc protocol (test/fixtures/fake-cli.ts). Real CLIs honour
// interrupts, so the escalation to a group kill needs one that does not.

const FAKE_CLI = join(dirname(), 'fixtures', 'fake-cli.ts');

function dirname(): string {
  return fileURLToPath(new URL('.', import.meta.url));
}

function fake(mode: string, ...extra: string[]): Record<string, string> {
  return {
    SWITCHYARD_CLI_EXECUTABLE: JSON.stringify({
      command: process.execPath,
      prefixArgs: [FAKE_CLI, `--fake=${mode}`, ...extra],
    }),
  };
}

describe('serve with a misbehaving CLI', () => {
  const suite = runnerSuite(() => TestHub.start());

  async function start(env: Record<string, string>): Promise<Served> {
    const served = serveRunner(await suite.hub.newSession(), 'pi', suite.model.url, env);
    suite.track(served.runner);
    return served;
  }

  test('a CLI that ignores interrupts: its whole group is killed at the deadline, one turn.done interrupted, the next message resumes', async () => {
    const { session, runner, stateDir } = await start({
      ...fake('ignore-interrupt'),
      SWITCHYARD_INTERRUPT_DEADLINE: '500ms',
    });
    await waitReady(session);
    const { messageId } = await session.sendMessage('stream forever');
    await waitEvent(session, (e) => e.messageId === messageId && e.event.type === 'text.delta', 'first delta');
    const [cliPid] = runner.cliPids();
    const t0 = Date.now();
    expect(await session.interrupt()).toEqual({ accepted: true });
    expect(await waitTurnDone(session, messageId, 10_000)).toMatchObject({ stopReason: 'interrupted' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    expect(runner.logs.some((l) => l.msg === 'killing the CLI process group')).toBe(true);
    // The fake's `sleep` child was in the group: nothing of it survives.
    expect(await waitGroupGone(cliPid as number, 5000)).toBe(true);

    const next = await session.sendMessage('again');
    expect(next.reply).toEqual({ accepted: true });
    await waitEvent(
      session,
      (e) => e.messageId === next.messageId && e.event.type === 'text.delta',
      'delta of the next turn',
    );
    expect(runner.cliPids()).toHaveLength(2);
    const argv = readFileSync(join(stateDir, 'cli', 'argv.log'), 'utf8')
      .trim()
      .split('\n');
    expect(argv).toHaveLength(2);
    expect(argv[1]).toContain('--session');
    expect(turnDones(session, messageId)).toHaveLength(1);

    // SIGTERM with a turn that will not end: finish window, interrupt, kill, exit 0.
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(turnDones(session, next.messageId)).toEqual([expect.objectContaining({ stopReason: 'interrupted' })]);
  });

  test('a crash mid-turn ends the turn with the head of the CLI’s stderr', async () => {
    const { session, runner } = await start(fake('crash'));
    await waitReady(session);
    const { messageId } = await session.sendMessage('crash please');
    const done = await waitTurnDone(session, messageId);
    expect(done).toMatchObject({ stopReason: 'error', error: { code: 'cli_exited', retryable: true } });
    expect(done.error?.message).toBe('CLI exited with code 3: fake-cli: segmentation fault in the model client');
    await stopRunner(runner);
  });

  test('a crash before the conversation reached disk: the next CLI starts a new conversation and says so', async () => {
    const { session, runner, stateDir } = await start(fake('crash', '--no-save'));
    await waitReady(session);
    const first = await session.sendMessage('crash before saving');
    expect((await waitTurnDone(session, first.messageId)).stopReason).toBe('error');
    const second = await session.sendMessage('and again');
    await waitTurnDone(session, second.messageId);
    const error = session.events().find((e) => e.event.type === 'error' && e.event.code === 'resume_unavailable');
    expect(error).toBeDefined();
    const argv = readFileSync(join(stateDir, 'cli', 'argv.log'), 'utf8')
      .trim()
      .split('\n');
    expect(argv[1]).not.toContain('"--session"');
    await stopRunner(runner);
  });

  test('a CLI that never becomes ready is killed and reported (cli_start_timeout)', async () => {
    const { session, runner } = await start({ ...fake('silent'), SWITCHYARD_CLI_START_TIMEOUT: '700ms' });
    const error = await waitEvent(
      session,
      (e) => e.event.type === 'error' && e.event.code === 'cli_start_timeout',
      'cli_start_timeout',
    );
    expect(error.event).toMatchObject({ retryable: true });
    await session.waitFor(() => session.statuses().at(-1)?.cli === 'stopped', 'cli stopped');
    const { messageId } = await session.sendMessage('anyone?');
    expect(await waitTurnDone(session, messageId)).toMatchObject({
      stopReason: 'error',
      error: { code: 'cli_start_timeout' },
    });
    await stopRunner(runner);
  });

  test('the hub refuses a bad token: exit 3 without retrying, no CLI started', async () => {
    const session = await suite.hub.newSession();
    const served = serveRunner(session, 'pi', suite.model.url, { SWITCHYARD_RUNNER_TOKEN: 'wrong-token-0000' });
    suite.track(served.runner);
    const exit = await exitWithin(served.runner, 10_000, 'exit after a refused token');
    expect(exit.code).toBe(3);
    expect(served.runner.cliPids()).toEqual([]);
    expect(served.runner.stderr()).not.toContain('wrong-token-0000');
  });

  test('a second runner for the session supersedes the first, which stops (exit 3) and kills its CLI', async () => {
    const first = await start(fake('normal'));
    await waitReady(first.session);
    const [cliPid] = first.runner.cliPids();
    const second = serveRunner(first.session, 'pi', suite.model.url, fake('normal'));
    suite.track(second.runner);
    expect((await exitWithin(first.runner, 10_000, 'superseded runner exit')).code).toBe(3);
    expect(await waitGroupGone(cliPid as number)).toBe(true);
    expect(first.runner.logs.some((l) => String(l.message ?? '').includes(String(RunnerCloseCode.superseded)))).toBe(
      true,
    );
    await first.session.waitFor(() => first.session.hellos().length === 2, 'second hello');
    await stopRunner(second.runner);
  });

  test('a pi started before the welcome refuses to switch onto the restored conversation: ended as a failed start, and the next message starts one resuming it', async () => {
    const first = await start(fake('normal'));
    await waitReady(first.session);
    const t1 = await first.session.sendMessage(slowText('before', 2, 10));
    expect((await waitTurnDone(first.session, t1.messageId)).stopReason).toBe('end_turn');
    await first.session.waitFor(() => first.session.transcripts().length > 0, 'the transcript of turn 1');
    await stopRunner(first.runner);
    // The fake answers switch_session `unsupported`, as a pi that cannot load the file would fail it.
    suite.hub.faults.holdWelcome(first.session.sessionId, true);
    const second = serveRunner(first.session, 'pi', suite.model.url, {
      ...fake('normal'),
      SWITCHYARD_FRESH_SESSION: '1',
    });
    suite.track(second.runner);
    await second.runner.waitForLog((l) => l.msg === 'cli ready', 'the early CLI ready');
    const [early] = second.runner.cliPids();
    suite.hub.faults.holdWelcome(first.session.sessionId, false);
    const refused = await first.session.sendMessage(slowText('during', 2, 10));
    expect(await waitTurnDone(first.session, refused.messageId)).toMatchObject({
      stopReason: 'error',
      error: { code: 'cli_reload_failed', retryable: true },
    });
    expect(await waitGroupGone(early as number)).toBe(true);
    const again = await first.session.sendMessage(slowText('after', 2, 10));
    expect((await waitTurnDone(first.session, again.messageId)).stopReason).toBe('end_turn');
    expect(second.runner.logs.filter((l) => l.msg === 'starting the CLI').map((l) => l.resume)).toEqual([false, true]);
    await stopRunner(second.runner);
  });

  test('the hub is down at first: the runner retries with backoff and serves once it is up', async () => {
    const session = await suite.hub.newSession();
    suite.hub.faults.refuse(session.sessionId, true);
    const served = serveRunner(session, 'pi', suite.model.url, fake('normal'));
    suite.track(served.runner);
    await served.runner.waitForLog(
      (l) => l.msg === 'hub link down; reconnecting' && Number(l.attempt) >= 3,
      'three failed dials',
    );
    suite.hub.faults.refuse(session.sessionId, false);
    await waitReady(session);
    const { messageId } = await session.sendMessage(slowText('late hub', 2, 10));
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    await stopRunner(served.runner);
  });
});

/** Processes whose command line names `path` (bubblewrap's carry each path they bind). */
function processesNaming(path: string): number[] {
  const naming = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path);
    } catch {
      return false; // exited while we looked
    }
  };
  return listProcs()
    .map((p) => p.pid)
    .filter(naming);
}

describe('serve killed', () => {
  const suite = runnerSuite(() => TestHub.start());

  test("SIGKILL while its CLI's sandbox is starting: nothing of the sandbox outlives it", async () => {
    // A fresh session spawns its CLI at once; the kill lands while bubblewrap sets up.
    const session = await suite.hub.newSession();
    const { runner, workspace } = serveRunner(session, 'pi', suite.model.url, { SWITCHYARD_FRESH_SESSION: '1' });
    suite.track(runner);
    await runner.waitForLog((l) => l.msg === 'cli started', 'the CLI started');
    runner.kill('SIGKILL');
    await runner.exited;
    // bubblewrap's init names the workspace it binds; with the model route's relay left running it
    // waited on it for good.
    const gone = await until('the sandbox gone', () => processesNaming(workspace).length === 0, 10_000).then(
      () => true,
      () => false,
    );
    expect(gone, `processes of the sandbox left: ${processesNaming(workspace).join(', ')}`).toBe(true);
  });
});
