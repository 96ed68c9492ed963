import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { RunnerCloseCode } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { transcriptKey } from '../src/hub/transcript-store.ts';
import { REPLAY_PAGE_EVENTS } from '../src/hub/viewer-frames.ts';
import { adminWithToken, expectError } from './helpers.ts';
import {
  call,
  createSession,
  hubContext,
  hubStub,
  launchAndConnect,
  postMessage,
  SseReader,
  until,
  type SessionTranscript,
} from './hub-helpers.ts';

// Attacks on the hub by a runner that misbehaves (a compromised CLI host) and by sheer log size.

afterEach(() => setHubRuntimeForTests({}));

async function logTypes(sessionId: string): Promise<string[]> {
  return runInDurableObject(hubStub(sessionId), (_hub, state) =>
    state.storage.sql
      .exec<{ type: string }>('SELECT type FROM events ORDER BY id')
      .toArray()
      .map((r) => r.type),
  );
}

describe('hub-only event types', () => {
  for (const forged of [
    { type: 'session.status' as const, state: 'stopped' as const, reason: 'an admin stopped this (not really)' },
    { type: 'message.user' as const, messageId: '01J00000000000000000000000', text: 'words the user never wrote' },
    // "Everything before this is saved": said by the hub after a commit it took, never by a runner.
    { type: 'workspace.saved' as const, files: 0, bytes: 0 },
  ]) {
    it(`refuses ${forged.type} from a runner: protocol error, nothing logged or shown`, async () => {
      const ctx = await hubContext();
      const sid = await createSession(ctx);
      const { runner, messageId } = await launchAndConnect(ctx, sid);
      const sse = await SseReader.open(ctx, sid);
      await sse.waitFor('the real message.user', (e) => e.event === 'message.user');
      const before = await logTypes(sid);
      runner.events([forged], messageId);
      expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
      expect(await logTypes(sid)).toEqual(before);
      expect(
        sse.events.filter(
          (e) => JSON.stringify(e.data).includes('not really') || JSON.stringify(e.data).includes('never wrote'),
        ),
      ).toEqual([]);
      await sse.close();
    });
  }
});

describe('log size cap', () => {
  it('stops storing at the cap with a coded error, ends the turn, stops the runner and refuses new messages and starts', async () => {
    const ctx = await hubContext({ logMaxBytes: 16 * 1024 });
    const sid = await createSession(ctx);
    const { runner, messageId } = await launchAndConnect(ctx, sid);
    runner.send({ type: 'accepted', inReplyTo: messageId });
    const chunk = 'x'.repeat(1000);
    for (let i = 0; i < 40; i++) runner.events([{ type: 'text.delta', index: 0, text: chunk }], messageId);
    await runner.waitFor('shutdown');
    const types = await logTypes(sid);
    const deltas = types.filter((t) => t === 'text.delta').length;
    expect(deltas).toBeGreaterThan(5);
    expect(deltas).toBeLessThan(16);
    const bytes = await runInDurableObject(
      hubStub(sid),
      (_hub, state) => state.storage.sql.exec<{ n: number }>('SELECT sum(length(data)) AS n FROM events').one().n,
    );
    // The cap plus the hub's own closing events (error, turn.done, status).
    expect(bytes).toBeLessThan(16 * 1024 + 2048);
    expect(types).toContain('error');
    const sse = await SseReader.open(ctx, sid);
    const done = await sse.waitFor('turn.done', (e) => e.event === 'turn.done');
    expect(done.data).toMatchObject({ stopReason: 'error', error: { code: 'session_log_full' } });
    const refused = expectError(await postMessage(ctx, sid, 'more'), 409, 'session_log_full');
    expect(refused.message).toMatch(/event log reached its limit .* start a new session/);
    // Nor is a runner started ahead for it once this one has gone (stopped after the grace).
    ctx.clock.advance(31_000);
    await runDurableObjectAlarm(hubStub(sid));
    await sse.waitFor(
      'stopped',
      (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'stopped',
    );
    const start = await call(ctx.app, 'POST', `/api/sessions/${sid}/start`, { token: ctx.token });
    expectError(start, 409, 'session_log_full');
    expect(ctx.launcher.startsFor(sid)).toHaveLength(1);
    await sse.close();
    runner.close();
  });
});

describe('paged reads', () => {
  it('replays at most one page per connection; the client resumes with Last-Event-ID and gets the rest exactly once', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, messageId } = await launchAndConnect(ctx, sid);
    runner.send({ type: 'accepted', inReplyTo: messageId });
    const total = REPLAY_PAGE_EVENTS + 300;
    for (let b = 0; b < total / 100; b++) {
      runner.events(
        Array.from({ length: 100 }, (_, i) => ({ type: 'text.delta' as const, index: 0, text: `${b * 100 + i}` })),
        messageId,
      );
    }
    await runner.waitAck(total);
    const first = await SseReader.open(ctx, sid);
    await until('the first page to end the stream', () => first.ended || undefined);
    expect(first.events).toHaveLength(REPLAY_PAGE_EVENTS);
    const second = await SseReader.open(ctx, sid, { lastEventId: first.events.at(-1)!.id });
    const all = (await logTypes(sid)).length;
    await second.waitForCount(all - REPLAY_PAGE_EVENTS);
    const ids = [...first.events, ...second.events].map((e) => e.id);
    expect(new Set(ids).size).toBe(all);
    expect(second.ended).toBe(false);
    await second.close();
    runner.close();
  });

  it('pages /transcript with limit and nextCursor; bad paging input is 400 naming the field', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, messageId } = await launchAndConnect(ctx, sid);
    runner.send({ type: 'accepted', inReplyTo: messageId });
    runner.events(
      [
        { type: 'message.assistant', content: [{ type: 'text', text: 'one' }] },
        { type: 'message.assistant', content: [{ type: 'text', text: 'two' }] },
        { type: 'turn.done', stopReason: 'end_turn' },
      ],
      messageId,
    );
    await runner.waitAck(3);
    const page1 = await call<SessionTranscript>(ctx.app, 'GET', `/api/sessions/${sid}/transcript?limit=2`, {
      token: ctx.token,
    });
    expect(page1.status).toBe(200);
    expect(page1.body.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(page1.body.nextCursor).toBe(page1.body.messages[1]?.eventId);
    const page2 = await call<SessionTranscript>(
      ctx.app,
      'GET',
      `/api/sessions/${sid}/transcript?limit=2&after=${page1.body.nextCursor}`,
      { token: ctx.token },
    );
    expect(page2.body.messages.map((m) => m.role)).toEqual(['assistant', 'turn']);
    expect(page2.body.nextCursor).toBeNull();
    const whole = await call<SessionTranscript>(ctx.app, 'GET', `/api/sessions/${sid}/transcript`, {
      token: ctx.token,
    });
    expect(whole.body.messages).toHaveLength(4);
    expect(
      expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/transcript?limit=0`, { token: ctx.token }), 400)
        .field,
    ).toBe('limit');
    expect(
      expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/transcript?after=nope`, { token: ctx.token }), 400)
        .field,
    ).toBe('after');
    runner.close();
  });
});

describe('audit of an admin in another user’s session', () => {
  it('records reads and the delete; the owner’s own reads leave no entry', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const admin = await adminWithToken(ctx.clock);
    const entries = async () =>
      (
        await env.DB.prepare('SELECT action, actor_id, before, after FROM audit_log WHERE target = ? ORDER BY id')
          .bind(`session:${sid}`)
          .all<{ action: string; actor_id: string; before: string | null; after: string | null }>()
      ).results;
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token })).status).toBe(200);
    expect(await entries()).toEqual([]);
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: admin.token })).status).toBe(200);
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}/transcript`, { token: admin.token })).status).toBe(200);
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: admin.token })).status).toBe(204);
    const got = await entries();
    expect(got.map((e) => [e.action, e.actor_id])).toEqual([
      ['session.read', admin.user.id],
      ['session.read', admin.user.id],
      ['session.delete', admin.user.id],
    ]);
    expect(JSON.parse(got[1]!.after!)).toEqual({ ownerId: ctx.user.id, route: '/transcript' });
    expect(JSON.parse(got[2]!.before!)).toMatchObject({ ownerId: ctx.user.id });
  });
});

describe('open SSE streams re-check who is reading', () => {
  const fast = { SSE_HEARTBEAT_SECONDS: '0.02' };

  it('a revoked token’s stream is closed at the next heartbeat', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid, { envOverride: fast });
    await until('heartbeats', () => sse.comments.filter((c) => c === 'heartbeat').length >= 2 || undefined);
    expect(sse.ended).toBe(false);
    expect((await call(ctx.app, 'POST', '/api/auth/logout', { token: ctx.token })).status).toBe(204);
    await until('the stream to end after the token was revoked', () => sse.ended || undefined);
    expect(sse.comments).toContain('access revoked');
  });

  it('a disabled user’s stream is closed, and an admin demoted while watching someone else’s session too', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const admin = await adminWithToken(ctx.clock);
    const other = await adminWithToken(ctx.clock);
    const own = await SseReader.open(ctx, sid, { envOverride: fast });
    const watching = await SseReader.open(ctx, sid, { envOverride: fast, token: other.token });
    await until(
      'heartbeats',
      () => (own.comments.includes('heartbeat') && watching.comments.includes('heartbeat')) || undefined,
    );
    expect(
      (
        await call(ctx.app, 'PATCH', `/api/admin/users/${ctx.user.id}`, {
          token: admin.token,
          body: { disabled: true },
        })
      ).status,
    ).toBe(200);
    await until('the disabled user’s stream to end', () => own.ended || undefined);
    expect(watching.ended).toBe(false);
    expect(
      (
        await call(ctx.app, 'PATCH', `/api/admin/users/${other.user.id}`, {
          token: admin.token,
          body: { role: 'user' },
        })
      ).status,
    ).toBe(200);
    await until('the demoted admin’s stream to end', () => watching.ended || undefined);
  });
});

describe('deleting a user', () => {
  it('deletes their sessions’ event logs and stored transcripts, and stops their runners', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid, 'something private');
    await env.TRANSCRIPTS.put(transcriptKey(sid), '{"private":true}');
    expect((await logTypes(sid)).length).toBeGreaterThan(0);
    const admin = await adminWithToken(ctx.clock);
    expect((await call(ctx.app, 'DELETE', `/api/admin/users/${ctx.user.id}`, { token: admin.token })).status).toBe(204);
    expect(await logTypes(sid)).toEqual([]);
    expect(await env.TRANSCRIPTS.get(transcriptKey(sid))).toBeNull();
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.sessionGone);
    expect(ctx.launcher.stops.map((s) => s.reason)).toContain('session deleted');
  });
});

describe('the hub URL given to runners', () => {
  it('is wss:// unless the host is loopback, whatever the request or RUNNER_HUB_URL says', async () => {
    const ctx = await hubContext();
    const cases: Array<[string, Partial<Env>, string]> = [
      ['http://edge.example.test', {}, 'wss://edge.example.test/internal/runner/connect'],
      ['https://edge.example.test', {}, 'wss://edge.example.test/internal/runner/connect'],
      ['http://localhost', {}, 'ws://localhost/internal/runner/connect'],
      [
        'http://localhost',
        { RUNNER_HUB_URL: 'ws://hub.example.test/internal/runner/connect' },
        'wss://hub.example.test/internal/runner/connect',
      ],
      [
        'http://localhost',
        { RUNNER_HUB_URL: 'ws://127.0.0.1:8787/internal/runner/connect' },
        'ws://127.0.0.1:8787/internal/runner/connect',
      ],
    ];
    for (const [base, extra, expected] of cases) {
      const sid = await createSession(ctx);
      const r = await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
        base,
        token: ctx.token,
        body: { text: 'x' },
        env: extra,
      });
      expect(r.status, r.text).toBe(202);
      const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
      expect(launch.hubUrl, `${base} ${JSON.stringify(extra)}`).toBe(expected);
    }
  });
});

describe('the hub RPC surface', () => {
  it('exposes the Worker’s methods only: the tick and the internals cannot be called past the serialization', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const stub = hubStub(sid) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    expect(await stub.snapshot?.()).toMatchObject({ ok: true });
    for (const name of [
      'tick',
      'serialized',
      'hub',
      'frames',
      'finish',
      'commit',
      'saveMeta',
      'startLaunch',
      'acceptRunner',
    ]) {
      await expect(
        Promise.resolve().then(() => stub[name]?.()),
        name,
      ).rejects.toThrow();
    }
  });
});
