import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { serveRunner, slowText, stopRunner, waitReady, waitTurnDone } from './contract/fixture.ts';
import { poolSocket, startPooledRunner } from './contract/pool-socket.ts';
import type { LogLine, RunnerProcess } from './contract/runner-process.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// Where a runner compacts V8's heap (docs/DESIGN.md "Runner memory" → "Between turns"): while its
// CLI is still starting, once a turn's transcript and files are stored, and in the pool once it
// waits for a claim; never while a CLI that is up may be taking a message. Real runner processes
// under bubblewrap, the real pi CLI (what is pinned is the runner's, not the CLI's), the offline
// model; each compaction is a debug log line. What it saves is measured in bench/runner, not here.

const DEBUG = { SWITCHYARD_LOG_LEVEL: 'debug' };
const compactions = (runner: RunnerProcess, at?: string) =>
  runner.logs.filter((l) => l.msg === 'heap compacted' && (at === undefined || l.at === at));
const indexOf = (runner: RunnerProcess, line: LogLine | undefined) => (line ? runner.logs.indexOf(line) : -1);
const firstLog = (runner: RunnerProcess, msg: string) => runner.logs.find((l) => l.msg === msg);

describe('pi: a runner gives its heap back where nothing waits for it', () => {
  const suite = runnerSuite(() => TestHub.start());
  const sockets: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) await s.close();
  });

  function start(session: Awaited<ReturnType<TestHub['newSession']>>, env: Record<string, string>) {
    // Nothing stored before: the start waits on no workspace store (the test hub has none).
    session.workspaceGeneration = 0;
    const served = serveRunner(session, 'pi', suite.model.url, { ...DEBUG, ...env });
    suite.track(served.runner);
    return served.runner;
  }

  /** A fresh session's runner whose welcome is held until it logged `until` ('cli started' or 'cli ready'). */
  async function startFresh(
    session: Awaited<ReturnType<TestHub['newSession']>>,
    until: string,
    env: Record<string, string> = {},
  ) {
    suite.hub.faults.holdWelcome(session.sessionId, true);
    const runner = start(session, { SWITCHYARD_FRESH_SESSION: '1', ...env });
    await runner.waitForLog((l) => l.msg === until, `${until} while the welcome is held`);
    suite.hub.faults.holdWelcome(session.sessionId, false);
    await waitReady(session);
    return runner;
  }

  async function turn(session: Awaited<ReturnType<TestHub['newSession']>>, runner: RunnerProcess) {
    const from = runner.logs.length;
    const { messageId } = await session.sendMessage(`turn-${randomUUID().slice(0, 8)}`);
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    return runner.waitForLog((l) => l.msg === 'transcript queued' && runner.logs.indexOf(l) >= from, 'the turn stored');
  }

  test('a fresh session: once while its CLI starts (the heap shrinks), once after each turn is stored, never within a turn', async () => {
    const session = await suite.hub.newSession();
    // The welcome comes once the CLI was spawned, so the runner's start is over before the CLI's.
    const runner = await startFresh(session, 'cli started');

    const [atStart, ...more] = compactions(runner, 'start');
    expect(more).toEqual([]);
    expect(indexOf(runner, atStart)).toBeGreaterThan(-1);
    expect(indexOf(runner, atStart)).toBeLessThan(indexOf(runner, firstLog(runner, 'cli ready')));
    // What the start left behind went back: V8's committed heap is smaller after it.
    const [heapBefore, heapAfter] = (atStart?.heapMiB ?? [0, 0]) as [number, number];
    expect(heapAfter).toBeLessThan(heapBefore);

    for (let i = 1; i <= 2; i++) {
      const sent = runner.logs.length;
      const stored = await turn(session, runner);
      const after = await runner.waitForLog(
        (l) => l.msg === 'heap compacted' && l.at === 'turn' && runner.logs.indexOf(l) > sent,
        `the compaction after turn ${i}`,
      );
      // Nothing between the message and the turn's transcript: the compaction came after both.
      expect(runner.logs.slice(sent, indexOf(runner, stored)).filter((l) => l.msg === 'heap compacted')).toEqual([]);
      expect(indexOf(runner, after)).toBeGreaterThan(indexOf(runner, stored));
    }
    expect(compactions(runner, 'turn')).toHaveLength(2);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });

  test('a CLI up before the welcome may be taking a message at once: no compaction at the start, only after the turn', async () => {
    const session = await suite.hub.newSession();
    const runner = await startFresh(session, 'cli ready');
    await turn(session, runner);
    await runner.waitForLog((l) => l.msg === 'heap compacted' && l.at === 'turn', 'the compaction after the turn');
    expect(compactions(runner, 'start')).toEqual([]);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
  });

  test('a message taken while the last turn is being stored: no compaction until the new turn is stored too', async () => {
    const session = await suite.hub.newSession();
    const runner = start(session, {});
    await waitReady(session);
    const from = runner.logs.length;
    const first = await session.sendMessage(`first-${randomUUID().slice(0, 8)}`);
    await waitTurnDone(session, first.messageId);
    // At once, and long enough (~2 s) that the first turn's transcript and files are stored while it runs.
    const second = await session.sendMessage(slowText(`second-${randomUUID().slice(0, 8)}`, 20, 100));
    await waitTurnDone(session, second.messageId);
    const secondDone = runner.logs.length;
    const stored = await runner.waitForLog(
      (l) => l.msg === 'transcript queued' && runner.logs.indexOf(l) >= secondDone,
      'the second turn stored',
    );
    await runner.waitForLog(
      (l) => l.msg === 'heap compacted' && runner.logs.indexOf(l) > indexOf(runner, stored),
      'after it',
    );
    // The first turn's storing finished during the second turn (its log is before the second's end).
    const firstStored = runner.logs.findIndex((l, i) => i >= from && l.msg === 'transcript queued');
    expect(firstStored).toBeLessThan(secondDone);
    expect(
      compactions(runner).filter((l) => indexOf(runner, l) >= from && indexOf(runner, l) < indexOf(runner, stored)),
    ).toEqual([]);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
  });

  test('SWITCHYARD_COMPACT_HEAP=0 leaves it to V8: no compaction through the start and two turns', async () => {
    const session = await suite.hub.newSession();
    const runner = await startFresh(session, 'cli started', { SWITCHYARD_COMPACT_HEAP: '0' });
    await turn(session, runner);
    // The first turn's compaction would have come before the second message is taken.
    await turn(session, runner);
    expect(compactions(runner)).toEqual([]);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
  });

  test('pooled: once while it waits for a claim; a claimed CLI taking the first message is left alone until the turn is stored', async () => {
    const pool = await poolSocket();
    sockets.push(pool);
    const runner = startPooledRunner(pool.url, 'pi', suite.model.url, DEBUG);
    suite.track(runner);
    await pool.hello;
    await runner.waitForLog((l) => l.msg === 'heap compacted' && l.at === 'pool', 'the compaction in the pool');

    const session = await suite.hub.newSession();
    pool.claim({
      type: 'claim',
      sessionId: session.sessionId,
      hubUrl: session.runnerEnv.SWITCHYARD_HUB_URL ?? '',
      runnerToken: session.runnerEnv.SWITCHYARD_RUNNER_TOKEN ?? '',
      first: { messageId: 'm-first', message: { text: 'pooled first' } },
    });
    expect((await waitTurnDone(session, 'm-first')).stopReason).toBe('end_turn');
    const stored = await runner.waitForLog((l) => l.msg === 'transcript queued', 'the turn stored');
    const after = await runner.waitForLog((l) => l.msg === 'heap compacted' && l.at === 'turn', 'after the turn');
    expect(indexOf(runner, after)).toBeGreaterThan(indexOf(runner, stored));
    // The welcome came while the claimed CLI was taking the first message.
    expect(compactions(runner, 'start')).toEqual([]);
    expect(compactions(runner)).toHaveLength(2);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });
});
