import { env } from 'cloudflare:workers';
import { RunnerCloseCode } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { transcriptKey } from '../src/hub/transcript-store.ts';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { ULID_PATTERN } from '../src/ids.ts';
import type { Session } from '../src/sessions/schemas.ts';
import { adminWithToken, createUser, expectError, tokenFor, userWithToken } from './helpers.ts';
import {
  call,
  createSession,
  hubContext,
  launchAndConnect,
  postMessage,
  until,
  type HubTestContext,
  type SessionDetail,
  type SessionPage,
  type AdminSessionPage,
  type SessionTranscript,
  setSettings,
} from './hub-helpers.ts';

// Every session route: success and each 4xx it can answer (DESIGN.md "HTTP API").

// What the routes answer (edge/src/sessions/schemas.ts).
type TranscriptEntry = SessionTranscript['messages'][number];

afterEach(() => setHubRuntimeForTests({}));

/**
 * env.DB, noting each round trip the Worker makes (not the hub's): the SQL of the statement it
 * ran, or of every statement of a batch.
 */
function recordingDb(db: D1Database, trips: string[][]): D1Database {
  const terminal = new Set(['first', 'all', 'run', 'raw']);
  const sqlOf = new WeakMap<D1PreparedStatement, { target: D1PreparedStatement; sql: string }>();
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === 'bind') return (...values: unknown[]) => wrap(target.bind(...values), sql);
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        if (!terminal.has(String(prop))) return value.bind(target);
        return (...args: unknown[]) => {
          trips.push([sql]);
          return value.apply(target, args);
        };
      },
    });
    sqlOf.set(proxy, { target: stmt, sql });
    return proxy;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'prepare') return (sql: string) => wrap(target.prepare(sql), sql);
      if (prop === 'batch')
        return (statements: D1PreparedStatement[]) => {
          const real = statements.map((s) => sqlOf.get(s) ?? { target: s, sql: '?' });
          trips.push(real.map((r) => r.sql));
          return target.batch(real.map((r) => r.target));
        };
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function otherUser(ctx: HubTestContext) {
  return userWithToken(ctx.clock);
}

describe('POST /api/sessions', () => {
  it('creates a session (201) with the backend pinned from settings; a later switch keeps it', async () => {
    const ctx = await hubContext();
    const r = await call<Session>(ctx.app, 'POST', '/api/sessions', {
      token: ctx.token,
      body: { title: '  my session ' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ title: 'my session', backend: 'claude', state: 'stopped', ownerId: ctx.user.id });
    expect(r.body.id).toMatch(ULID_PATTERN);
    expect(r.body.stateReason).toMatch(/first message starts one/);

    await setSettings(ctx, { llmBackend: 'pi' });
    const pi = await call<Session>(ctx.app, 'POST', '/api/sessions', { token: ctx.token });
    expect(pi.status).toBe(201);
    expect(pi.body).toMatchObject({ backend: 'pi', title: null });
    const old = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${r.body.id}`, { token: ctx.token });
    expect(old.body.backend).toBe('claude');
    // The runner launched for the old session is a claude runner.
    await postMessage(ctx, r.body.id, 'hi');
    expect((await until('launch', () => ctx.launcher.startsFor(r.body.id)[0])).backend).toBe('claude');
    await postMessage(ctx, pi.body.id, 'hi');
    expect((await until('launch', () => ctx.launcher.startsFor(pi.body.id)[0])).backend).toBe('pi');
    await setSettings(ctx, { llmBackend: 'claude' });
  });

  it('400 for bad input, 401 without auth, 403 for a cross-site cookie request, 413 for a huge body', async () => {
    const ctx = await hubContext();
    expectError(
      await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: { title: '' } }),
      400,
      'invalid_request',
    );
    const unknown = expectError(
      await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: { name: 'x' } }),
      400,
    );
    expect(unknown.field).toBe('name');
    expect(
      expectError(await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: { title: 'a\u0007b' } }), 400)
        .field,
    ).toBe('title');
    expectError(await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, raw: '{nope' }), 400, 'invalid_json');
    expectError(await call(ctx.app, 'POST', '/api/sessions', {}), 401, 'unauthenticated');
    expectError(
      await call(ctx.app, 'POST', '/api/sessions', { cookie: ctx.token, origin: 'https://evil.example' }),
      403,
      'csrf_rejected',
    );
    expectError(
      await call(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: { title: 'x'.repeat(70_000) } }),
      413,
      'payload_too_large',
    );
    // A same-origin cookie request works.
    expect((await call(ctx.app, 'POST', '/api/sessions', { cookie: ctx.token })).status).toBe(201);
  });
});

describe('every JSON route bounds its body', () => {
  // An unbounded route read any body whole into the isolate's memory, chunked ones too.
  it('an answer to an approval: 413 over the bound on one’s own session, 404 on another’s; an admin route 413', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const huge = JSON.stringify({ decision: 'allow', reason: 'x'.repeat(70_000) });
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${id}/approvals/a1`, { token: ctx.token, raw: huge }),
      413,
      'payload_too_large',
    );
    const other = await otherUser(ctx);
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${id}/approvals/a1`, { token: other.token, raw: huge }),
      404,
      'not_found',
    );
    // Under the bound it reaches the route: no such approval.
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${id}/approvals/a1`, {
        token: ctx.token,
        body: { decision: 'allow' },
      }),
      404,
    );
    const admin = await adminWithToken(ctx.clock);
    expectError(
      await call(ctx.app, 'PUT', '/api/admin/runner-pool', {
        token: admin.token,
        raw: JSON.stringify({ claude: 1, pad: 'x'.repeat(70_000) }),
      }),
      413,
      'payload_too_large',
    );
  });
});

describe('PATCH /api/sessions/:id', () => {
  it('renames (owner), clears with null; 400 names title; another user 404; an admin who is not the owner 403', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const r = await call<Session>(ctx.app, 'PATCH', `/api/sessions/${id}`, {
      token: ctx.token,
      body: { title: ' renamed ' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id, title: 'renamed' });
    expect(
      (await call<SessionPage>(ctx.app, 'GET', '/api/sessions', { token: ctx.token })).body.sessions[0]?.title,
    ).toBe('renamed');
    expect(
      (await call<Session>(ctx.app, 'PATCH', `/api/sessions/${id}`, { token: ctx.token, body: { title: null } })).body
        .title,
    ).toBeNull();
    expect(
      expectError(await call(ctx.app, 'PATCH', `/api/sessions/${id}`, { token: ctx.token, body: { title: '' } }), 400)
        .field,
    ).toBe('title');
    expect(
      expectError(await call(ctx.app, 'PATCH', `/api/sessions/${id}`, { token: ctx.token, body: {} }), 400).field,
    ).toBe('title');
    const other = await otherUser(ctx);
    expectError(
      await call(ctx.app, 'PATCH', `/api/sessions/${id}`, { token: other.token, body: { title: 'x' } }),
      404,
      'not_found',
    );
    const admin = await adminWithToken(ctx.clock);
    expectError(
      await call(ctx.app, 'PATCH', `/api/sessions/${id}`, { token: admin.token, body: { title: 'x' } }),
      403,
      'forbidden',
    );
    expectError(
      await call(ctx.app, 'PATCH', `/api/sessions/${id}`, {
        cookie: ctx.token,
        origin: 'https://evil.example',
        body: { title: 'x' },
      }),
      403,
      'csrf_rejected',
    );
    expect(
      (await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${id}`, { token: ctx.token })).body.title,
    ).toBeNull();
  });
});

describe('GET /api/sessions and /api/sessions/:id', () => {
  it('lists only the caller’s sessions, newest first, in pages', async () => {
    const ctx = await hubContext();
    const mine = [await createSession(ctx), await createSession(ctx), await createSession(ctx)];
    const other = await otherUser(ctx);
    await createSession(ctx, other.token);
    const page1 = await call<SessionPage>(ctx.app, 'GET', '/api/sessions?limit=2', { token: ctx.token });
    expect(page1.status).toBe(200);
    expect(page1.body.sessions.map((s) => s.id)).toEqual([mine[2], mine[1]]);
    const page2 = await call<SessionPage>(ctx.app, 'GET', `/api/sessions?limit=2&cursor=${page1.body.nextCursor}`, {
      token: ctx.token,
    });
    expect(page2.body.sessions.map((s) => s.id)).toEqual([mine[0]]);
    expect(page2.body.nextCursor).toBeNull();
    expectError(await call(ctx.app, 'GET', '/api/sessions?limit=0', { token: ctx.token }), 400);
    expectError(await call(ctx.app, 'GET', '/api/sessions?cursor=x', { token: ctx.token }), 400);
    expectError(await call(ctx.app, 'GET', '/api/sessions'), 401);
  });

  it('reads a session with its live state; another user gets 404, an admin may read it', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const r = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: sid, state: 'stopped', turn: null, runner: null, lastEventId: null });
    const other = await otherUser(ctx);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: other.token }), 404, 'not_found');
    const admin = await adminWithToken(ctx.clock);
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: admin.token })).status).toBe(200);
    expectError(await call(ctx.app, 'GET', '/api/sessions/not-an-id', { token: ctx.token }), 404);
    expectError(await call(ctx.app, 'GET', '/api/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV', { token: ctx.token }), 404);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}`), 401);

    await postMessage(ctx, sid, 'go');
    const busy = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
    expect(busy.body).toMatchObject({
      state: 'starting',
      turn: { messageId: expect.any(String) },
      runner: { connected: false },
    });
    expect(busy.body.lastEventId).toMatch(ULID_PATTERN);
  });
});

describe('DELETE /api/sessions/:id', () => {
  it('stops the runner, ends the link, deletes events and transcript; then 404', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    await until('launch', () => ctx.launcher.startsFor(sid).length === 1);
    await env.TRANSCRIPTS.put(transcriptKey(sid), '{}');
    const other = await otherUser(ctx);
    expectError(await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: other.token }), 404);
    expectError(
      await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { cookie: ctx.token, origin: null }),
      403,
      'csrf_rejected',
    );
    const r = await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: ctx.token });
    expect(r.status).toBe(204);
    expect(runner.of('shutdown')).toHaveLength(1);
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.sessionGone);
    expect(ctx.launcher.stops.map((s) => s.reason)).toContain('session deleted');
    expect(await env.TRANSCRIPTS.get(transcriptKey(sid))).toBeNull();
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token }), 404);
    expectError(await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: ctx.token }), 404);
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { token: ctx.token, body: { text: 'x' } }),
      404,
    );
  });

  it('an admin may delete another user’s session', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const admin = await adminWithToken(ctx.clock);
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: admin.token })).status).toBe(204);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token }), 404);
  });
});

describe('POST /api/sessions/:id/messages', () => {
  it('202 with a messageId; 400 for bad input naming the field; 415 for non-JSON', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    expect(
      expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { token: ctx.token, body: {} }), 400)
        .field,
    ).toBe('text');
    expect(expectError(await postMessage(ctx, sid, ''), 400).field).toBe('text');
    expect(expectError(await postMessage(ctx, sid, 'x', { extra: 1 }), 400).field).toBe('extra');
    expect(
      expectError(await postMessage(ctx, sid, 'x', { images: [{ mediaType: 'image/bmp', data: 'AAAA' }] }), 400).field,
    ).toBe('images.0.mediaType');
    expect(expectError(await postMessage(ctx, sid, 'x', { clientMessageId: 'has space' }), 400).field).toBe(
      'clientMessageId',
    );
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
        token: ctx.token,
        raw: 'text=hi',
        contentType: 'application/x-www-form-urlencoded',
      }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
        token: ctx.token,
        raw: '{"text":',
        contentType: 'application/json',
      }),
      400,
      'invalid_json',
    );
    const ok = await postMessage(ctx, sid, 'hi', { images: [{ mediaType: 'image/png', data: 'iVBORw0KGgo=' }] });
    expect(ok.status).toBe(202);
    expect(ok.body).toEqual({ messageId: expect.stringMatching(ULID_PATTERN), duplicate: false });
    const launch = await until('launch', () => ctx.launcher.startsFor(sid)[0]);
    expect(launch.hubUrl).toBe('ws://localhost/internal/runner/connect');
  });

  it('401, 403 for an admin who is not the owner, 404 for another user, 409 while a turn waits', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { body: { text: 'x' } }), 401);
    const admin = await adminWithToken(ctx.clock);
    expectError(await postMessage(ctx, sid, 'x', {}, admin.token), 403, 'forbidden');
    const other = await otherUser(ctx);
    expectError(await postMessage(ctx, sid, 'x', {}, other.token), 404, 'not_found');
    expect((await postMessage(ctx, sid, 'first')).status).toBe(202);
    expectError(await postMessage(ctx, sid, 'second'), 409, 'conflict');
  });

  it('reads the token, the session and (for a message) the settings in one D1 round trip; nothing for a request that carries no token it would look up', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const trips: string[][] = [];
    const DB = recordingDb(env.DB, trips);
    const token = /FROM auth_tokens t JOIN users/;
    const session = /FROM sessions WHERE id/;
    const settings = /FROM settings/;
    const reads = () => trips.filter((t) => t.some((sql) => [token, session, settings].some((r) => r.test(sql))));
    const shape = (trip: string[] | undefined) =>
      (trip ?? []).map((sql) => [token, session, settings].findIndex((r) => r.test(sql)));

    const sent = await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
      token: ctx.token,
      body: { text: 'x' },
      env: { DB },
    });
    expect(sent.status).toBe(202);
    // One batch: the token, the session, the settings (the size check and the launch take these).
    expect(reads().map(shape)).toEqual([[0, 1, 2]]);

    trips.length = 0;
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token, env: { DB } })).status).toBe(200);
    expect(reads().map(shape)).toEqual([[0, 1]]);

    // The same with the session cookie of a page of this app.
    trips.length = 0;
    expect((await call(ctx.app, 'GET', `/api/sessions/${sid}`, { cookie: ctx.token, env: { DB } })).status).toBe(200);
    expect(reads().map(shape)).toEqual([[0, 1]]);

    // Without a credential nothing is read; the answer is the same 401.
    trips.length = 0;
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { body: { text: 'x' }, env: { DB } }),
      401,
    );
    expect(trips).toEqual([]);
    // A forged cross-site cookie request is refused before any token is looked up.
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
        cookie: ctx.token,
        origin: 'https://evil.example',
        body: { text: 'x' },
        env: { DB },
      }),
      403,
      'csrf_rejected',
    );
    expect(trips).toEqual([]);
    // A token-shaped credential that is not valid gets the 401 and nothing of what was read.
    const forged = await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
      token: `${ctx.token.slice(0, -4)}AAAA`,
      body: { text: 'x' },
      env: { DB },
    });
    expectError(forged, 401, 'unauthenticated');
    expect(forged.text).not.toContain(sid);
  });

  it('413 above settings.maxMessageBytes, checked before the body is parsed', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    await setSettings(ctx, { maxMessageBytes: 2048 });
    const err = expectError(await postMessage(ctx, sid, 'x'.repeat(3000)), 413, 'payload_too_large');
    expect(err.message).toMatch(/2048/);
    // Not JSON at all, but too big: still 413 (the size is checked first).
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { token: ctx.token, raw: '#'.repeat(5000) }),
      413,
    );
    expect((await postMessage(ctx, sid, 'x'.repeat(1900))).status).toBe(202);
    await setSettings(ctx, { maxMessageBytes: 1024 * 1024 });
  });

  it('a cookie-authenticated message needs this app’s Origin', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    expectError(
      await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, {
        cookie: ctx.token,
        origin: null,
        body: { text: 'x' },
      }),
      403,
      'csrf_rejected',
    );
    expect(
      (await call(ctx.app, 'POST', `/api/sessions/${sid}/messages`, { cookie: ctx.token, body: { text: 'x' } })).status,
    ).toBe(202);
  });
});

describe('POST /api/sessions/:id/interrupt', () => {
  it('409 with no turn; 401/403/404 like messages', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: ctx.token }), 409, 'conflict');
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, {}), 401);
    const admin = await adminWithToken(ctx.clock);
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: admin.token }), 403);
    const other = await otherUser(ctx);
    expectError(await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: other.token }), 404);
    await postMessage(ctx, sid, 'x');
    const r = await call(ctx.app, 'POST', `/api/sessions/${sid}/interrupt`, { token: ctx.token });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ accepted: true });
  });
});

describe('GET /api/sessions/:id/events and /transcript', () => {
  it('events: owner and admin get a stream, another user 404, no auth 401', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const other = await otherUser(ctx);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/events`, { token: other.token }), 404);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/events`), 401);
    const admin = await adminWithToken(ctx.clock);
    const res = await ctx.app.request(
      `http://localhost/api/sessions/${sid}/events`,
      { headers: { Authorization: `Bearer ${admin.token}` } },
      env,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Type')).toMatch(/^text\/event-stream/);
    await res.body?.cancel();
  });

  it('transcript: the conversation as normalized messages; another user 404', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid, 'list files');
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    runner.events(
      [
        { type: 'text.delta', index: 0, text: 'Sure' },
        {
          type: 'message.assistant',
          content: [
            { type: 'text', text: 'Sure' },
            { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        { type: 'tool.result', toolId: 't1', isError: false, output: 'a.txt' },
        { type: 'message.assistant', content: [{ type: 'text', text: 'One file.' }] },
        { type: 'turn.done', stopReason: 'end_turn' },
      ],
      um.messageId,
    );
    await runner.waitAck(5);
    const r = await call<SessionTranscript>(ctx.app, 'GET', `/api/sessions/${sid}/transcript`, { token: ctx.token });
    expect(r.status).toBe(200);
    expect(r.body.backend).toBe('claude');
    expect(r.body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'turn']);
    expect(r.body.messages[0]).toMatchObject({ role: 'user', text: 'list files', messageId: um.messageId });
    // The roles were just asserted: entry 1 is the assistant's.
    expect((r.body.messages[1] as Extract<TranscriptEntry, { role: 'assistant' }>).content[1]).toEqual({
      type: 'tool_use',
      id: 't1',
      name: 'Bash',
      input: { command: 'ls' },
    });
    expect(r.body.messages[4]).toMatchObject({ role: 'turn', stopReason: 'end_turn', messageId: um.messageId });
    const other = await otherUser(ctx);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/transcript`, { token: other.token }), 404);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${sid}/transcript`), 401);
    runner.close();
  });
});

describe('GET /api/admin/sessions', () => {
  it('lists live sessions of every user with owner and runner; `all` includes stopped ones; users get 403', async () => {
    const ctx = await hubContext();
    const idle = await createSession(ctx);
    const someone = await createUser();
    const theirToken = await tokenFor(someone.id, ctx.clock);
    const live = await createSession(ctx, theirToken);
    await postMessage(ctx, live, 'go', {}, theirToken);
    await until('launch', () => ctx.launcher.startsFor(live)[0]);
    const admin = await adminWithToken(ctx.clock);
    const r = await until('the live session with its runner ref', async () => {
      const res = await call<AdminSessionPage>(ctx.app, 'GET', '/api/admin/sessions', { token: admin.token });
      const row = res.body.sessions.find((s) => s.id === live);
      return row?.runnerRef ? res : undefined;
    });
    expect(r.body.sessions.find((s) => s.id === live)).toMatchObject({
      state: 'starting',
      owner: { id: someone.id, username: someone.username },
      runnerRef: ctx.launcher.ref(1),
    });
    expect(r.body.sessions.some((s) => s.id === idle)).toBe(false);
    const all = await call<AdminSessionPage>(ctx.app, 'GET', '/api/admin/sessions?state=all', { token: admin.token });
    expect(all.body.sessions.some((s) => s.id === idle)).toBe(true);
    expectError(await call(ctx.app, 'GET', '/api/admin/sessions?state=dead', { token: admin.token }), 400);
    expectError(await call(ctx.app, 'GET', '/api/admin/sessions', { token: ctx.token }), 403, 'forbidden');
    expectError(await call(ctx.app, 'GET', '/api/admin/sessions'), 401);
  });
});
