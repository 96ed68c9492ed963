import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { WARM_UP_PROMPT } from '../src/cli/warm-up.ts';
import { WARM_UP_REPLY_TEXT } from '../src/sandbox/warm-up-reply.ts';
import { WELCOME_RESTORE_LOG } from '../src/serve/welcome-rule.ts';
import {
  serveRunner,
  stopRunner,
  textOf,
  turnDones,
  waitGroupGone,
  waitReady,
  waitTurnDone,
  type Served,
} from './contract/fixture.ts';
import type { RunnerProcess } from './contract/runner-process.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// A runner launched with SWITCHYARD_FRESH_SESSION=1 starts its CLI while the hub link comes up
// (docs/DESIGN.md "Runner behaviour (serve)"). Real runner processes, real CLIs, the offline model.
// The hub holds its welcome, so "the CLI is up before the welcome" is an ordering the test
// controls, not a race it measures.

describe.each(['claude', 'pi'] as const)('%s: a fresh session', (backend) => {
  const suite = runnerSuite(() => TestHub.start());

  function start(session: Awaited<ReturnType<TestHub['newSession']>>, env: Record<string, string> = {}): Served {
    const served = serveRunner(session, backend, suite.model.url, env);
    suite.track(served.runner);
    return served;
  }

  const uniq = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

  function requestFor(marker: string) {
    return suite.model.requests().find((r) => {
      const body = r.body as { messages?: Array<{ role: string; content: unknown }> } | null;
      const lastUser = body?.messages?.filter((m) => m.role === 'user').at(-1);
      return r.response?.mainTurn === true && JSON.stringify(lastUser?.content ?? '').includes(marker);
    });
  }

  test('its CLI is spawned before the runner dials the hub and is ready before the hub welcomes it; the first message is answered by that CLI', async () => {
    const session = await suite.hub.newSession();
    session.workspaceGeneration = 0;
    suite.hub.faults.holdWelcome(session.sessionId, true);
    // The runner's child processes as it dials in: its spawn is synchronous, so a CLI spawned
    // before the dial is among them (docs/DESIGN.md "Runner behaviour (serve)": the link's
    // WebSocket client loads behind the CLI's start).
    const childrenAtDial: string[][] = [];
    const { runner } = start(session, { SWITCHYARD_FRESH_SESSION: '1' });
    suite.hub.faults.onUpgrade(session.sessionId, () =>
      childrenAtDial.push(readFileSync(`/proc/${runner.pid}/task/${runner.pid}/children`, 'utf8').trim().split(' ')),
    );
    await session.waitFor(() => session.hellos().length === 1, 'the hello');
    const started = await runner.waitForLog((l) => l.msg === 'cli started', 'the CLI started');
    expect(childrenAtDial[0]).toContain(String(started.pid));
    // The guard's self-test passed before anything was spawned: hello reports it.
    expect(session.hellos()[0]?.capabilities.guard).toBe('loaded');
    await runner.waitForLog((l) => l.msg === 'cli ready', 'the CLI ready while the welcome is held');
    expect(session.statuses()).toEqual([]);
    suite.hub.faults.holdWelcome(session.sessionId, false);
    await waitReady(session);

    const marker = uniq('fresh');
    const { messageId, reply } = await session.sendMessage(marker);
    expect(reply).toEqual({ accepted: true });
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
    expect(turnDones(session, messageId)).toHaveLength(1);
    // One CLI for the whole session: the one started before the welcome.
    expect(runner.logs.filter((l) => l.msg === 'cli started')).toHaveLength(1);
    // The CLI started early still never sees the runner token.
    const token = session.runnerEnv.SWITCHYARD_RUNNER_TOKEN ?? '';
    for (const pid of runner.cliPids()) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(token);
    expect(runner.stderr()).not.toContain(token);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });

  test('started ahead (SWITCHYARD_WARM_UP): the CLI takes its first turn before it is up, and none of it leaves the runner', async () => {
    const session = await suite.hub.newSession();
    session.workspaceGeneration = 0;
    suite.hub.faults.holdWelcome(session.sessionId, true);
    const calls = () => suite.model.requests().filter((r) => r.method === 'POST').length;
    const before = calls();
    const { runner } = start(session, { SWITCHYARD_FRESH_SESSION: '1', SWITCHYARD_WARM_UP: '1' });
    await session.waitFor(() => session.hellos().length === 1, 'the hello');
    // Not up at the hello: the hub shows the session starting until the warm-up is over.
    expect(session.hellos()[0]?.cli).toBe('starting');
    const ready = await runner.waitForLog((l) => l.msg === 'cli ready', 'the CLI ready while the welcome is held');
    // Every step taken: claude's side question and context usage, pi's prompt, new session and state.
    expect(ready.warmUp).toEqual({ steps: backend === 'claude' ? 2 : 3, refused: 0 });
    // The credential proxy answered the warm-up's model call itself.
    expect(calls()).toBe(before);
    suite.hub.faults.holdWelcome(session.sessionId, false);
    await waitReady(session);

    const marker = uniq('ahead');
    const { messageId } = await session.sendMessage(marker);
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    // From the CLI's readiness on the proxy forwards: the offline model wrote this answer.
    expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
    const main = requestFor(marker)?.body as { messages?: Array<{ role: string }> } | undefined;
    expect(main?.messages?.map((m) => m.role)).toEqual(['user']);
    expect(JSON.stringify(main)).not.toContain(WARM_UP_PROMPT);
    const log = JSON.stringify(session.events());
    expect(log).not.toContain(WARM_UP_PROMPT);
    expect(log).not.toContain(WARM_UP_REPLY_TEXT);
    expect(runner.logs.filter((l) => l.msg === 'cli started')).toHaveLength(1);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });

  test.each([
    ['during its warm-up: it waits for it', 'cli warming up', backend === 'claude' ? 2 : 3],
    ['before its CLI is up: no warm-up, the message goes first', 'cli started', 0],
  ] as const)('started ahead, a message that arrives %s, and is answered upstream', async (_when, after, steps) => {
    const session = await suite.hub.newSession();
    session.workspaceGeneration = 0;
    suite.hub.faults.holdWelcome(session.sessionId, true);
    const { runner } = start(session, { SWITCHYARD_FRESH_SESSION: '1', SWITCHYARD_WARM_UP: '1' });
    await session.waitFor(() => session.hellos().length === 1, 'the hello');
    await runner.waitForLog((l) => l.msg === after, after);
    suite.hub.faults.holdWelcome(session.sessionId, false);
    const marker = uniq('early');
    const { messageId, reply } = await session.sendMessage(marker);
    expect(reply).toEqual({ accepted: true });
    // What this test is about: the message reached the runner before its CLI was ready.
    expect(runner.logs.some((l) => l.msg === 'cli ready')).toBe(false);
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
    expect(runner.logs.find((l) => l.msg === 'cli ready')?.warmUp).toEqual({ steps, refused: 0 });
    expect(JSON.stringify(session.events())).not.toContain(WARM_UP_REPLY_TEXT);
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });

  test('started ahead, a CLI that dies before it is ready: the next one takes no warm-up and the message is answered upstream', async () => {
    const session = await suite.hub.newSession();
    session.workspaceGeneration = 0;
    const { runner } = start(session, { SWITCHYARD_FRESH_SESSION: '1', SWITCHYARD_WARM_UP: '1' });
    const started = await runner.waitForLog((l) => l.msg === 'cli started', 'the first CLI');
    // Its whole process group, as when the CLI crashes: bubblewrap and what it started with it.
    process.kill(-(started.pid as number), 'SIGKILL');
    await runner.waitForLog((l) => l.msg === 'cli exit' && l.gen === started.gen, 'the first CLI gone');
    // What this test is about: that CLI never got ready, so the proxy was never told to forward then.
    // The next CLI starts at the welcome if the kill came first, else for the message.
    expect(runner.logs.some((l) => l.msg === 'cli ready' && l.gen === started.gen)).toBe(false);

    const marker = uniq('after-death');
    const { messageId } = await session.sendMessage(marker);
    expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
    expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
    expect(JSON.stringify(session.events())).not.toContain(WARM_UP_REPLY_TEXT);
    expect(runner.cliPids()).toHaveLength(2);
    // Only a CLI started ahead of the first message warms up, and only the first such.
    expect(runner.logs.filter((l) => l.msg === 'cli warming up' && l.gen !== started.gen)).toEqual([]);
    expect(runner.logs.find((l) => l.msg === 'cli ready')?.warmUp).toBeUndefined();
    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });

  // pi reloads onto what the welcome restored (switch_session); claude is replaced by a new CLI.
  const restored = backend === 'pi' ? 'reloaded' : 'replaced';
  const ruleSaid = WELCOME_RESTORE_LOG[backend === 'pi' ? 'reload' : 'replace'];

  test(`a welcome that brings a transcript anyway: the early CLI is ${restored} and resumes it`, async () => {
    const session = await suite.hub.newSession();
    const a = start(session);
    await waitReady(session);
    const marker1 = uniq('apple');
    const t1 = await session.sendMessage(marker1);
    await waitTurnDone(session, t1.messageId);
    await session.waitFor(() => session.transcripts().length > 0, 'transcript of turn 1');
    const [cliA] = a.runner.cliPids();
    a.runner.kill('SIGKILL');
    await a.runner.exited;
    expect(await waitGroupGone(cliA as number)).toBe(true);

    // The launch said fresh, the hub's welcome disagrees: the welcome wins.
    suite.hub.faults.holdWelcome(session.sessionId, true);
    const b = start(session, { SWITCHYARD_FRESH_SESSION: '1' });
    await b.runner.waitForLog((l) => l.msg === 'cli started', 'the early CLI');
    const [early] = b.runner.cliPids();
    suite.hub.faults.holdWelcome(session.sessionId, false);
    // Sent at once: it reaches the runner while the transcript is restored and the CLI reloads or
    // starts, and must wait for the conversation (pi would run a prompt beside its switch).
    const marker2 = uniq('banana');
    const t2 = await session.sendMessage(marker2);
    await b.runner.waitForLog((l) => l.msg === 'transcript restored', 'transcript restored');
    await b.runner.waitForLog((l) => l.msg === ruleSaid, `the early CLI ${restored}`);
    if (backend === 'claude') {
      expect(await waitGroupGone(early as number)).toBe(true);
      await b.runner.waitForLog(
        (l) => l.msg === 'starting the CLI' && l.resume === true,
        'a CLI started with the resume arguments',
      );
    } else {
      await b.runner.waitForLog((l) => l.msg === 'reloading the CLI' && l.resume === true, 'the reload onto it');
    }
    expect((await waitTurnDone(session, t2.messageId)).stopReason).toBe('end_turn');
    expect(JSON.stringify((requestFor(marker2)?.body as { messages: unknown[] } | undefined)?.messages)).toContain(
      marker1,
    );
    if (backend === 'pi') {
      // One CLI for the second runner, the early one; it went on in the session's own conversation
      // (the same pi session, its transcript the same file), and every session.init names it.
      expect(b.runner.logs.filter((l) => l.msg === 'cli started')).toHaveLength(1);
      expect(b.runner.cliPids()).toEqual([early]);
      const inits = session.events().flatMap((e) => (e.event.type === 'session.init' ? [e.event.cliSessionId] : []));
      expect(inits.length).toBeGreaterThan(1);
      expect(new Set(inits)).toEqual(new Set([inits[0]]));
      const second = session.hellos().at(-1)?.runnerId;
      const uploaded = await session.waitFor(
        () => session.transcripts().find((t) => t.runnerId === second),
        "the second runner's transcript",
      );
      expect(uploaded.transcript.resumeId).toBe(session.transcripts()[0]?.transcript.resumeId);
    }
    await stopRunner(b.runner);
    expect(session.violations()).toEqual([]);
  });

  test(`files in the welcome: the CLI started before it is ${restored}, and the first message waits for the files`, async () => {
    const session = await suite.hub.newSession();
    session.workspaceGeneration = 1;
    // The store answers the runner's pull only once the runner has taken the message, and then
    // HOLD_MS later: a window in which a message written at once would show. The order is read
    // from the runner's own stamp of its stdin write against the answer's time.
    const HOLD_MS = 200;
    let took!: () => void;
    const taken = new Promise<void>((r) => (took = r));
    let answeredAt = Number.POSITIVE_INFINITY;
    suite.hub.http = (_req, res) =>
      void taken.then(() =>
        setTimeout(() => {
          answeredAt = Date.now();
          res.writeHead(404).end();
        }, HOLD_MS),
      );
    try {
      // The welcome waits until the early CLI is up, so it has named a conversation of its own (pi's
      // answer to get_state), as a pooled runner's has.
      suite.hub.faults.holdWelcome(session.sessionId, true);
      const { runner } = start(session, { SWITCHYARD_FRESH_SESSION: '1', SWITCHYARD_BENCH_HOPS: '1' });
      await runner.waitForLog((l) => l.msg === 'cli ready', 'the early CLI ready');
      suite.hub.faults.holdWelcome(session.sessionId, false);
      // The CLI's start looks at the workspace (claude's git status, pi's .pi/): its
      // successor starts, or pi reloads, with the files.
      await runner.waitForLog((l) => l.msg === ruleSaid, `the early CLI ${restored}`);
      const m = await session.sendMessage(uniq('files-first'));
      took();
      expect((await waitTurnDone(session, m.messageId)).stopReason).toBe('end_turn');
      const starts = runner.logs.filter((l) => l.msg === 'starting the CLI');
      // The replaced CLI's conversation is forgotten: its successor does not try to resume it; a
      // reloaded pi starts a new conversation over the files.
      const after = backend === 'pi' ? runner.logs.find((l) => l.msg === 'reloading the CLI') : starts[1];
      expect(starts.map((l) => l.resume)).toEqual(backend === 'pi' ? [false] : [false, false]);
      expect(after?.resume).toBe(false);
      const codes = session.events().flatMap((e) => (e.event.type === 'error' ? [e.event.code] : []));
      expect(codes).toEqual(['workspace_restore_failed']);
      expect(
        Date.parse(String(after?.t)),
        "the second CLI's start (pi: its reload) against the store's answer",
      ).toBeGreaterThanOrEqual(answeredAt - HOLD_MS / 4);
      const stdin = session.events().find((e) => e.messageId === m.messageId && e.hops?.stdin !== undefined)
        ?.hops?.stdin;
      // Slack for two processes' clocks; a message written before the answer is HOLD_MS early.
      expect(stdin, "the stdin write against the store's answer").toBeGreaterThan(answeredAt - HOLD_MS / 4);
      if (backend === 'pi') {
        // The message waited for the reload too (pi would run a prompt beside new_session): it is
        // written once the reloaded CLI is ready again, a clock this process shares with the log.
        const reloaded = runner.logs.filter((l) => l.msg === 'cli ready').at(1);
        expect(stdin, 'the stdin write against the reload').toBeGreaterThanOrEqual(Date.parse(String(reloaded?.t)));
      }
    } finally {
      suite.hub.http = undefined;
    }
  });

  test('a welcome saying nothing was ever stored: no restore before the first message; without it, a restore', async () => {
    const restoreTried = (r: RunnerProcess) =>
      r.logs.some((l) => l.msg === 'workspace restore failed' || l.msg === 'workspace pulled');
    const empty = await suite.hub.newSession();
    empty.workspaceGeneration = 0;
    const a = start(empty, { SWITCHYARD_FRESH_SESSION: '1' });
    await waitReady(empty);
    const m = await empty.sendMessage(uniq('empty'));
    expect((await waitTurnDone(empty, m.messageId)).stopReason).toBe('end_turn');
    expect(restoreTried(a.runner)).toBe(false);
    await stopRunner(a.runner);
    // A hub that does not say: the runner restores first (this hub has no store, so that fails, loudly).
    const unknown = await suite.hub.newSession();
    unknown.workspaceGeneration = undefined;
    const b = start(unknown, { SWITCHYARD_FRESH_SESSION: '1' });
    await b.runner.waitForLog((l) => l.msg === 'workspace restore failed', 'the restore');
    await stopRunner(b.runner);
  });
});
