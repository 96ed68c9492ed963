import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { Backend } from '@switchyard/protocol';
import { locateCli } from '../../src/cli/locate.ts';
import type { ContractHub, ContractSession } from './contract-hub.ts';
import {
  exitWithin,
  scripted,
  serveRunner,
  slowText,
  stopRunner,
  textOf,
  turnDones,
  waitEvent,
  waitGroupGone,
  waitReady,
  waitTurnDone,
  type Served,
} from './fixture.ts';
import { runnerSuite } from './suite.ts';

/** The runner contract, run against one real CLI and the offline model, with the hub behind ContractHub. */
export function defineServeContract(backend: Backend, makeHub: () => Promise<ContractHub>): void {
  describe(`serve contract: ${backend}`, () => {
    const suite = runnerSuite(makeHub);

    async function start(
      env: Record<string, string> = {},
      session?: ContractSession,
      dirs: { workspace?: string } = {},
    ): Promise<Served> {
      const s = session ?? (await suite.hub.newSession());
      const served = serveRunner(s, backend, suite.model.url, env, dirs);
      suite.track(served.runner);
      return served;
    }

    /** Main-turn requests the model saw whose last user text contains `marker`. */
    function requestsFor(marker: string) {
      return suite.model.requests().filter((r) => {
        const body = r.body as { messages?: Array<{ role: string; content: unknown }>; tools?: unknown[] } | null;
        const lastUser = body?.messages?.filter((m) => m.role === 'user').at(-1);
        return (
          r.response?.mainTurn === true && lastUser !== undefined && JSON.stringify(lastUser.content).includes(marker)
        );
      });
    }

    function uniq(name: string): string {
      return `${name}-${randomUUID().slice(0, 8)}`;
    }

    test('hello, ready, one turn: deltas, exactly one turn.done, transcript after it; token stays out of the CLI', async () => {
      const { session, runner } = await start();
      await waitReady(session);
      const hello = session.hellos()[0];
      expect(hello).toMatchObject({
        protocol: 1,
        backend,
        cliVersion: locateCli(backend).version,
        lastSeq: 0,
        capabilities: { guard: 'loaded', sandbox: 'bubblewrap' },
      });

      const marker = uniq('hello');
      const { messageId, reply } = await session.sendMessage(marker);
      expect(reply).toEqual({ accepted: true });
      const done = await waitTurnDone(session, messageId);
      expect(done.stopReason).toBe('end_turn');
      expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
      await session.waitFor(() => session.transcripts().length > 0, 'a transcript');
      const doneAt = session.events().findIndex((e) => e.event.type === 'turn.done' && e.messageId === messageId);
      expect(session.transcripts()[0]?.afterEvents).toBeGreaterThan(doneAt);
      expect(session.transcripts()[0]?.transcript.backend).toBe(backend);

      // The runner token is in no CLI environment and in no log line.
      const token = session.runnerEnv.SWITCHYARD_RUNNER_TOKEN ?? '';
      for (const pid of runner.cliPids()) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(token);
      expect(runner.stderr()).not.toContain(token);

      expect(turnDones(session, messageId)).toHaveLength(1);
      expect(await stopRunner(runner)).toMatchObject({ code: 0 });
      expect(session.byes().at(-1)).toMatchObject({ reason: 'signal' });
      expect(session.violations()).toEqual([]);
    });

    test('a tool call runs through serve: tool.start, tool.end, tool.result, then the answer', async () => {
      const { session, runner, workspace } = await start();
      await waitReady(session);
      const { messageId } = await session.sendMessage(
        scripted(uniq('tool'), { tool: 'shell', command: 'echo tool-ran > proof.txt; echo done' }),
      );
      expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
      const types = session
        .events()
        .filter((e) => e.messageId === messageId)
        .map((e) => e.event.type);
      expect(types).toEqual(expect.arrayContaining(['tool.start', 'tool.end', 'tool.result', 'text.delta']));
      expect(types.indexOf('tool.result')).toBeGreaterThan(types.indexOf('tool.end'));
      expect(readFileSync(`${workspace}/proof.txt`, 'utf8').trim()).toBe('tool-ran');
      await stopRunner(runner);
    });

    test('a message while a turn runs is rejected busy; the same messageId again is a duplicate, not a second turn', async () => {
      const { session, runner } = await start();
      await waitReady(session);
      const first = await session.sendMessage(slowText(uniq('busy'), 15, 100));
      expect(first.reply).toEqual({ accepted: true });
      const second = await session.sendMessage('second while busy');
      expect(second.reply).toMatchObject({ accepted: false, error: { code: 'busy', retryable: true } });
      const again = await session.sendMessage('ignored text', { messageId: first.messageId });
      expect(again.reply).toEqual({ accepted: true, duplicate: true });
      await waitTurnDone(session, first.messageId);
      expect(turnDones(session, first.messageId)).toHaveLength(1);
      expect(turnDones(session, second.messageId)).toHaveLength(0);
      expect(await session.interrupt()).toMatchObject({ accepted: false, error: { code: 'no_turn' } });
      await stopRunner(runner);
    });

    test("interrupt through the CLI's own interrupt: exactly one turn.done interrupted, same CLI serves the next turn", async () => {
      const { session, runner } = await start();
      await waitReady(session);
      const { messageId } = await session.sendMessage(slowText(uniq('int'), 40, 150));
      await waitEvent(session, (e) => e.messageId === messageId && e.event.type === 'text.delta', 'first delta');
      expect(await session.interrupt()).toEqual({ accepted: true });
      const done = await waitTurnDone(session, messageId, 10_000);
      expect(done.stopReason).toBe('interrupted');

      const next = await session.sendMessage(uniq('after-int'));
      expect(next.reply).toEqual({ accepted: true });
      expect((await waitTurnDone(session, next.messageId)).stopReason).toBe('end_turn');
      expect(turnDones(session, messageId)).toHaveLength(1);
      // The CLI honoured it: nothing was killed and no second CLI was needed.
      expect(runner.logs.some((l) => l.msg === 'killing the CLI process group')).toBe(false);
      expect(runner.cliPids()).toHaveLength(1);
      await stopRunner(runner);
    });

    test('a provider 401 ends the turn after one request although the CLI may retry ten times: provider_auth, not retryable; the same CLI serves the next turn', async () => {
      const { session, runner } = await start({ SWITCHYARD_CLI_RETRIES: '10', SWITCHYARD_CLI_RETRY_BASE_MS: '2000' });
      await waitReady(session);
      const marker = uniq('auth');
      const { messageId } = await session.sendMessage(scripted(marker, { error: 401 }));
      const done = await waitTurnDone(session, messageId, 30_000);
      expect(done).toMatchObject({ stopReason: 'error', error: { code: 'provider_auth', retryable: false } });
      expect(session.events().filter((e) => e.messageId === messageId && e.event.type === 'turn.retry')).toEqual([]);
      expect(requestsFor(marker)).toHaveLength(1);
      // claude folds the interrupted message into the next one, so the next one brings its own directive (the last one wins).
      const next = await session.sendMessage(
        scripted(uniq('after-auth'), { text: 'answered after the provider error' }),
      );
      expect(await waitTurnDone(session, next.messageId)).toMatchObject({ stopReason: 'end_turn' });
      expect(textOf(session, next.messageId)).toBe('answered after the provider error');
      expect(turnDones(session, messageId)).toHaveLength(1);
      expect(runner.cliPids()).toHaveLength(1);
      await stopRunner(runner);
    });

    test('a provider 429 is retried with turn.retry within SWITCHYARD_CLI_RETRIES, then ends provider_rate_limited, retryable', async () => {
      const { session, runner } = await start({ SWITCHYARD_CLI_RETRIES: '1' });
      await waitReady(session);
      const marker = uniq('rate');
      const { messageId } = await session.sendMessage(scripted(marker, { error: 429 }));
      const done = await waitTurnDone(session, messageId, 30_000);
      expect(done).toMatchObject({ stopReason: 'error', error: { code: 'provider_rate_limited', retryable: true } });
      const retries = session.events().filter((e) => e.messageId === messageId && e.event.type === 'turn.retry');
      expect(retries.map((e) => e.event)).toEqual([
        expect.objectContaining({ attempt: 1, reason: expect.stringContaining('provider_rate_limited') }),
      ]);
      expect(requestsFor(marker)).toHaveLength(2);
      expect(turnDones(session, messageId)).toHaveLength(1);
      await stopRunner(runner);
    });

    test('watchdog: no CLI output for longer than the stall timeout ends the turn as cli_stalled', async () => {
      const { session, runner } = await start({ SWITCHYARD_STALL_TIMEOUT: '1500ms' });
      await waitReady(session);
      const { messageId } = await session.sendMessage(slowText(uniq('stall'), 3, 8000));
      const done = await waitTurnDone(session, messageId, 15_000);
      expect(done).toMatchObject({ stopReason: 'error', error: { code: 'cli_stalled', retryable: true } });
      const next = await session.sendMessage(uniq('after-stall'));
      expect((await waitTurnDone(session, next.messageId)).stopReason).toBe('end_turn');
      expect(turnDones(session, messageId)).toHaveLength(1);
      await stopRunner(runner);
    });

    test('CLI killed mid-turn: turn.done error naming the signal; the next message starts a CLI that resumes', async () => {
      const { session, runner } = await start();
      await waitReady(session);
      const firstMarker = uniq('crash-first');
      const first = await session.sendMessage(firstMarker);
      await waitTurnDone(session, first.messageId);
      // Turn 1 is on disk once its transcript went out (claude flushes it just after the turn).
      await session.waitFor(() => session.transcripts().length > 0, 'transcript of turn 1');

      const { messageId } = await session.sendMessage(slowText(uniq('crash'), 40, 150));
      await waitEvent(session, (e) => e.messageId === messageId && e.event.type === 'text.delta', 'first delta');
      const [cliPid] = runner.cliPids();
      process.kill(cliPid as number, 'SIGKILL');
      const done = await waitTurnDone(session, messageId, 10_000);
      expect(done).toMatchObject({ stopReason: 'error', error: { code: 'cli_exited' } });
      expect(done.error?.message).toContain('SIGKILL');
      await session.waitFor(() => session.statuses().at(-1)?.cli === 'stopped', 'status cli stopped');

      const thirdMarker = uniq('crash-third');
      const third = await session.sendMessage(thirdMarker);
      expect(await waitTurnDone(session, third.messageId)).toMatchObject({ stopReason: 'end_turn' });
      expect(runner.cliPids()).toHaveLength(2);
      expect(runner.logs.filter((l) => l.msg === 'starting the CLI').at(-1)).toMatchObject({ resume: true });
      const [request] = requestsFor(thirdMarker);
      expect(JSON.stringify((request?.body as { messages: unknown[] } | undefined)?.messages)).toContain(firstMarker);
      await stopRunner(runner);
    });

    test('resume across runners: SIGKILL the runner, a new runner restores the transcript and the model sees turn 1', async () => {
      const session = await suite.hub.newSession();
      const a = await start({}, session);
      await waitReady(session);
      const marker1 = uniq('apple');
      const t1 = await session.sendMessage(marker1);
      await waitTurnDone(session, t1.messageId);
      await session.waitFor(() => session.transcripts().length > 0, 'transcript of turn 1');
      const [cliA] = a.runner.cliPids();
      a.runner.kill('SIGKILL');
      await a.runner.exited;
      // With its runner gone the CLI reads EOF on stdin and exits: no orphan even after SIGKILL.
      expect(await waitGroupGone(cliA as number)).toBe(true);

      // A new container has its own workspace path; the conversation must not depend on the old one.
      const b = await start({}, session);
      expect(b.workspace).not.toBe(a.workspace);
      await session.waitFor(() => session.hellos().length === 2, 'second hello');
      await waitReady(session);
      await b.runner.waitForLog((l) => l.msg === 'transcript restored', 'transcript restored');
      const marker2 = uniq('banana');
      const t2 = await session.sendMessage(marker2);
      expect((await waitTurnDone(session, t2.messageId)).stopReason).toBe('end_turn');
      const [request] = requestsFor(marker2);
      expect(request).toBeDefined();
      expect(JSON.stringify((request?.body as { messages: unknown[] } | undefined)?.messages)).toContain(marker1);
      expect(new Set(session.hellos().map((h) => h.runnerId)).size).toBe(2);
      await stopRunner(b.runner);
    });

    test('link loss: cut mid-stream three times, the hub log has every event exactly once, in order', async () => {
      const faults = suite.hub.faults;
      const { session, runner } = await start();
      await waitReady(session);
      // Lazy acks plus forgetting unacked frames on each cut forces real resends.
      faults.setAckEvery(session.sessionId, 3);
      const words = Array.from({ length: 36 }, (_, i) => `w${i}`).join(' ');
      const { messageId } = await session.sendMessage(scripted(uniq('cut'), { text: words, chunks: 36, delayMs: 60 }));
      const deltas = () =>
        session.events().filter((e) => e.messageId === messageId && e.event.type === 'text.delta').length;
      for (const at of [4, 12, 22]) {
        await session.waitFor(() => deltas() >= at, `${at} deltas`);
        faults.cutLink(session.sessionId, { dropUnacked: true });
      }
      await waitTurnDone(session, messageId, 20_000);
      expect(textOf(session, messageId)).toBe(words);
      expect(turnDones(session, messageId)).toHaveLength(1);
      const seqs = session.events().map((e) => e.seq);
      const all = [...seqs, ...session.transcripts().map((t) => t.seq)].sort((x, y) => x - y);
      expect(all).toEqual(all.map((_, i) => i + 1));
      expect(session.violations()).toEqual([]);
      expect(session.hellos().length).toBeGreaterThanOrEqual(4);
      expect(new Set(session.hellos().map((h) => h.runnerId)).size).toBe(1);
      await stopRunner(runner);
    });

    test('buffer overflow while the hub does not ack fails the session loudly (bye with error, exit 4)', async () => {
      const faults = suite.hub.faults;
      const { session, runner } = await start({
        SWITCHYARD_BUFFER_MAX_EVENTS: '20',
        SWITCHYARD_SHUTDOWN_DEADLINE: '1s',
      });
      await waitReady(session);
      faults.pauseAcks(session.sessionId, true);
      // A 12 s stream: the runner must fail at the overflow, not when the turn would have ended.
      await session.sendMessage(slowText(uniq('flood'), 600, 20));
      const exit = await exitWithin(runner, 8000, 'exit after overflow');
      expect(exit.code).toBe(4);
      expect(session.byes().at(-1)).toMatchObject({ reason: 'buffer_overflow', error: { code: 'buffer_overflow' } });
      expect(runner.logs.some((l) => l.level === 'error' && l.msg.includes('overflow'))).toBe(true);
      // Nothing was dropped silently: the hub got every frame up to the overflow.
      const seqs = session.events().map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    });

    test('idle exit: no message for the idle timeout → bye idle, exit 0, transcript delivered', async () => {
      const { session, runner } = await start({ SWITCHYARD_IDLE_TIMEOUT: '2s' });
      await waitReady(session);
      const { messageId } = await session.sendMessage(uniq('idle'));
      await waitTurnDone(session, messageId);
      const doneAt = Date.now();
      const exit = await exitWithin(runner, 15_000, 'idle exit');
      expect(exit.code).toBe(0);
      expect(exit.atMs - doneAt).toBeGreaterThanOrEqual(1500);
      expect(session.byes().at(-1)).toMatchObject({ reason: 'idle' });
      expect(session.transcripts().length).toBeGreaterThan(0);
    });

    test('max lifetime: a running turn is interrupted, transcript uploaded, bye max_lifetime, exit 0', async () => {
      const { session, runner } = await start({ SWITCHYARD_MAX_LIFETIME: '7s' });
      await waitReady(session);
      const { messageId } = await session.sendMessage(slowText(uniq('lifetime'), 100, 150));
      const exit = await exitWithin(runner, 15_000, 'max lifetime exit');
      expect(exit.code).toBe(0);
      expect(turnDones(session, messageId)).toEqual([expect.objectContaining({ stopReason: 'interrupted' })]);
      expect(session.byes().at(-1)).toMatchObject({ reason: 'max_lifetime' });
      expect(session.transcripts().length).toBeGreaterThan(0);
    });

    test('SIGTERM mid-turn: turn interrupted, transcript uploaded, bye, exit 0 within the deadline', async () => {
      const { session, runner } = await start({ SWITCHYARD_SHUTDOWN_DEADLINE: '8s' });
      await waitReady(session);
      const { messageId } = await session.sendMessage(slowText(uniq('term'), 100, 150));
      await waitEvent(session, (e) => e.messageId === messageId && e.event.type === 'text.delta', 'first delta');
      const t0 = Date.now();
      runner.kill('SIGTERM');
      const exit = await exitWithin(runner, 15_000, 'exit after SIGTERM');
      expect(exit.code).toBe(0);
      expect(exit.atMs - t0).toBeLessThan(8000);
      expect(turnDones(session, messageId)).toEqual([expect.objectContaining({ stopReason: 'interrupted' })]);
      const doneAt = session.events().findIndex((e) => e.event.type === 'turn.done');
      expect(session.transcripts().at(-1)?.afterEvents).toBeGreaterThan(doneAt);
      expect(session.byes()).toEqual([expect.objectContaining({ reason: 'signal' })]);
      expect(session.statuses().some((s) => s.state === 'stopping')).toBe(true);
    });
  });
}
