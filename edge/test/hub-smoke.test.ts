import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { createSession, FakeRunner, hubContext, postMessage, SseReader, statusStates, until } from './hub-helpers.ts';

afterEach(() => setHubRuntimeForTests({}));

describe('smoke', () => {
  it('runs one turn end to end', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    const r = await postMessage(ctx, sid, 'hi');
    expect(r.status).toBe(202);
    const launch = await until(() => ctx.launcher.startsFor(sid)[0], 'launch');
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: sid });
    runner.hello(sid);
    const welcome = await runner.waitFor('welcome');
    expect(welcome.ackedSeq).toBe(0);
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    runner.events([{ type: 'text.delta', index: 0, text: 'yo' }, { type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
    await runner.waitAck(2);
    await sse.waitFor((e) => e.event === 'session.status' && (e.data as {state:string}).state === 'idle', 'idle');
    console.log(sse.events.map((e) => `${e.id} ${e.event} ${JSON.stringify(e.data)}`).join('\n'));
    expect(statusStates(sse.events)).toEqual(['starting', 'busy', 'idle']);
    await sse.close();
    runner.close();
  });
});
