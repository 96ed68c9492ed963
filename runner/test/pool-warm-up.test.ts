import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, test } from 'vitest';
import { WARM_UP_PROMPT } from '../src/cli/warm-up.ts';
import { WARM_UP_REPLY_TEXT } from '../src/sandbox/warm-up-reply.ts';
import { stopRunner, textOf, waitTurnDone } from './contract/fixture.ts';
import { poolSocket, startPooledRunner } from './contract/pool-socket.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// A pooled runner's CLI takes its first turn before any session exists (docs/DESIGN.md "Warm
// runner pool" → "The CLI's first turn, taken before the claim"). Real runner processes in pooled
// mode under bubblewrap, real CLIs, the offline model upstream; the pool coordinator is a socket
// (contract/pool-socket.ts) that records the hello and sends the claim. What is pinned: nothing of
// the warm-up reaches the model, the hub or the session's conversation and transcript, and from
// the claim on the session's calls go upstream. That the warm-up makes a first message faster is
// measured in bench/pool, never here.

type Body = { messages?: Array<{ role: string; content: unknown }>; system?: unknown };

describe.each(['claude', 'pi'] as const)('%s: a pooled runner warms its CLI up', (backend) => {
  const suite = runnerSuite(() => TestHub.start());
  const sockets: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) await s.close();
  });

  test('before the claim; nothing of it reaches the model, the hub or the conversation', async () => {
    const pool = await poolSocket();
    sockets.push(pool);
    const runner = startPooledRunner(pool.url, backend, suite.model.url);
    suite.track(runner);
    const calls = () => suite.model.requests().filter((r) => r.method === 'POST').length;
    const before = calls();

    // The runner joins the pool only once its CLI is up and went through the warm-up.
    expect(await pool.hello).toMatchObject({ type: 'pool_hello', backend });
    const ready = runner.logs.find((l) => l.msg === 'cli ready');
    // Every step taken: claude's side question and context usage, pi's prompt, new session and state.
    expect(ready?.warmUp).toEqual({ steps: backend === 'claude' ? 2 : 3, refused: 0 });
    // The credential proxy answered the warm-up's model call itself.
    expect(calls()).toBe(before);

    const session = await suite.hub.newSession();
    const marker = `first-${randomUUID().slice(0, 8)}`;
    pool.claim({
      type: 'claim',
      sessionId: session.sessionId,
      hubUrl: session.runnerEnv.SWITCHYARD_HUB_URL ?? '',
      runnerToken: session.runnerEnv.SWITCHYARD_RUNNER_TOKEN ?? '',
      first: { messageId: 'm-first', message: { text: marker } },
    });
    const done = await waitTurnDone(session, 'm-first');
    expect(done.stopReason).toBe('end_turn');
    // From the claim on the model proxy forwards: the offline model wrote this answer.
    expect(textOf(session, 'm-first')).toContain(`Offline model reply to: ${marker}`);

    // The session's first model call carries its first message and nothing before it.
    const mainCalls = suite.model
      .requests()
      .slice(before)
      .filter((r) => r.response?.mainTurn === true);
    expect(mainCalls).toHaveLength(1);
    const body = mainCalls[0]?.body as Body;
    expect(body.messages?.map((m) => m.role)).toEqual(['user']);
    expect(JSON.stringify(body)).toContain(marker);
    expect(JSON.stringify(body)).not.toContain(WARM_UP_PROMPT);
    expect(JSON.stringify(body)).not.toContain(WARM_UP_REPLY_TEXT);

    // The hub heard nothing of the warm-up, and the transcript it keeps is the session's alone.
    const log = JSON.stringify(session.events());
    expect(log).not.toContain(WARM_UP_PROMPT);
    expect(log).not.toContain(WARM_UP_REPLY_TEXT);
    expect(session.events().filter((e) => e.event.type === 'turn.done')).toHaveLength(1);
    const transcript = await session.waitFor(() => session.transcripts().at(-1), 'the transcript after the turn');
    const stored = gunzipSync(Buffer.from(transcript.transcript.data, 'base64')).toString('utf8');
    expect(stored).toContain(marker);
    expect(stored).not.toContain(WARM_UP_PROMPT);

    expect(await stopRunner(runner)).toMatchObject({ code: 0 });
    expect(session.violations()).toEqual([]);
  });
});
