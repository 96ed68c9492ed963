// End to end, through HTTP only, like a client: one stack started the way `npm start` does
// (startStack: wrangler dev + the local runner host + the offline model), real claude and pi
// CLIs behind real runners. One stack for the whole file (2-core machines: a stack is expensive).
// The claude group runs first (the default backend), then the admin switches to pi and the same
// behaviours run again on pi sessions.
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveInGroups } from '@switchyard/runner/host';
import type { Stack } from '../../scripts/start.ts';
import { E2eHarness, offlineRequests, sendMessage, offline } from '../helpers/e2e-harness.ts';
import { Api, textOf, until, type SseEvent, type SseStream } from '../helpers/sse-client.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

const h = new E2eHarness({ logLines: 60 });
const { dumpOnFail, track } = h;
let stack: Stack;
let admin: Api;
/** Every process group a runner task of this stack used (checked empty after stop()). */
const runnerGroups = new Set<number>();

async function sampleRunners(): Promise<void> {
  for (const t of await stack.runners()) {
    for (const g of t.groups) runnerGroups.add(g);
    if (t.pid !== null) runnerGroups.add(t.pid);
  }
}

beforeAll(async () => {
  ({ stack, admin } = await h.start('e2e'));
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await h.closeStreams();
  if (stack !== undefined) {
    await sampleRunners().catch(() => undefined);
    for (const svc of stack.services) svc.sample();
    const serviceGroups = new Set(stack.services.flatMap((s) => [...s.groups]));
    await h.stop();
    // No leftover runner (or CLI) process, and nothing of the services either.
    await until(
      'runner and service process groups to be empty',
      () => liveInGroups(new Set([...runnerGroups, ...serviceGroups])).length === 0,
      15_000,
    ).catch(() => undefined);
    expect(liveInGroups(runnerGroups), 'leftover runner/CLI processes').toEqual([]);
    expect(liveInGroups(serviceGroups), 'leftover service processes').toEqual([]);
    expect(runnerGroups.size).toBeGreaterThan(0);
  } else {
    // The stack may have started and the login failed: it still has to stop.
    await h.stop();
  }
}, 120_000);

async function createSession(api: Api, title?: string): Promise<{ id: string; backend: string }> {
  const r = await api.call<{ id: string; backend: string }>(
    'POST',
    '/api/sessions',
    title === undefined ? {} : { title },
  );
  expect(r.status, r.text).toBe(201);
  return r.body;
}

async function expectDone(s: SseStream, messageId: string, stopReason: string, timeoutMs = TURN_MS): Promise<SseEvent> {
  const done = await s.turnDone(messageId, timeoutMs);
  expect(
    done.data.stopReason,
    `turn.done ${JSON.stringify(done.data)}; recent: ${JSON.stringify(
      s.events
        .filter((e) => e.event !== 'text.delta')
        .slice(-25)
        .map((e) => ({ event: e.event, ...e.data })),
    ).slice(0, 4000)}`,
  ).toBe(stopReason);
  return done;
}

/**
 * A reader's event ids up to and including the turn's turn.done. Events after it (the session's
 * status) reach each reader at its own time, so a list read once turn.done has arrived may or may
 * not have them yet.
 */
function idsThroughDone(events: SseEvent[], messageId: string): string[] {
  const end = events.findIndex((e) => e.event === 'turn.done' && e.data.messageId === messageId);
  expect(end, `turn.done of ${messageId}`).toBeGreaterThanOrEqual(0);
  return events.slice(0, end + 1).map((e) => e.id);
}

/** Events of one turn: between its message.user and its turn.done. */
function turnEvents(s: SseStream, messageId: string): SseEvent[] {
  return s.ofMessage(messageId);
}

async function runnerOf(sessionId: string) {
  return until(
    `a running runner task for ${sessionId}`,
    async () => {
      const tasks = await stack.runners();
      for (const t of tasks) for (const g of t.groups) runnerGroups.add(g);
      return tasks.find((t) => t.sessionId === sessionId && t.lastStatus === 'RUNNING' && t.pid !== null);
    },
    60_000,
  );
}

/** The behaviours every backend must show. */
function backendSuite(backend: 'claude' | 'pi') {
  const tag = `${backend.toUpperCase()}`;

  it(
    `${backend}: log in, create a session, send a message, read SSE to turn.done`,
    dumpOnFail(async () => {
      const me = await admin.call<{ username: string; role: string }>('GET', '/api/me');
      expect(me.status).toBe(200);
      expect(me.body.role).toBe('admin');
      const s = await createSession(admin, `${backend} basic`);
      expect(s.backend).toBe(backend);
      const mid = await sendMessage(
        admin,
        s.id,
        offline({ text: `hello from the offline model to ${tag}` }, `greet ${tag}`),
      );
      const sse = await track(admin.events(s.id));
      const done = await sse.turnDone(mid, TURN_MS);
      expect(done.data.stopReason).toBe('end_turn');
      const types = sse.events.map((e) => e.event);
      expect(types[0]).toBe('message.user');
      expect(sse.events[0]?.data.messageId).toBe(mid);
      const statuses = sse.events.filter((e) => e.event === 'session.status').map((e) => e.data.state);
      expect(statuses).toContain('starting');
      expect(statuses).toContain('busy');
      const init = sse.events.find((e) => e.event === 'session.init');
      expect(init?.data.backend).toBe(backend);
      const turn = turnEvents(sse, mid);
      expect(textOf(turn)).toBe(`hello from the offline model to ${tag}`);
      expect(turn.filter((e) => e.event === 'message.assistant')).toHaveLength(1);
      expect(turn.filter((e) => e.event === 'turn.done')).toHaveLength(1);
      // ids strictly increase
      const ids = sse.events.map((e) => e.id);
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      // The second message on the same (warm) runner.
      const mid2 = await sendMessage(admin, s.id, `second message ${tag}`);
      await expectDone(sse, mid2, 'end_turn', TURN_MS);
      expect(textOf(turnEvents(sse, mid2))).toBe(`Offline model reply to: second message ${tag}`);
      // Exactly one turn.done per message, also counted once everything of turn 1 has surely arrived.
      expect(sse.events.filter((e) => e.event === 'turn.done').map((e) => e.data.messageId)).toEqual([mid, mid2]);
      const tr = await admin.call<{ backend: string; messages: Array<{ role: string; text?: string }> }>(
        'GET',
        `/api/sessions/${s.id}/transcript`,
      );
      expect(tr.status).toBe(200);
      expect(tr.body.backend).toBe(backend);
      expect(tr.body.messages.filter((m) => m.role === 'user').map((m) => m.text)).toEqual([
        expect.stringContaining(`greet ${tag}`),
        `second message ${tag}`,
      ]);
      await sse.close();
      await sampleRunners();
      expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
    }),
    TURN_MS * 3,
  );

  it(
    `${backend}: a tool call streams tool.start/tool.end/tool.result and really writes the file`,
    dumpOnFail(async () => {
      const s = await createSession(admin);
      const content = `written by the ${backend} e2e test`;
      const mid = await sendMessage(
        admin,
        s.id,
        offline({ tool: 'write', path: 'e2e-note.txt', content }, 'write a note'),
      );
      const sse = await track(admin.events(s.id));
      const done = await sse.turnDone(mid, TURN_MS);
      expect(done.data.stopReason).toBe('end_turn');
      const turn = turnEvents(sse, mid);
      const start = turn.find((e) => e.event === 'tool.start');
      const end = turn.find((e) => e.event === 'tool.end');
      const result = turn.find((e) => e.event === 'tool.result');
      expect(start?.data.name).toMatch(/^write$/i);
      expect(end?.data.toolId).toBe(start?.data.toolId);
      expect(JSON.stringify(end?.data.input)).toContain(content);
      expect(result?.data.toolId).toBe(start?.data.toolId);
      expect(result?.data.isError, JSON.stringify(result?.data)).toBe(false);
      expect(turn.filter((e) => e.event === 'turn.done')).toHaveLength(1);
      // The file is in the session's workspace on the runner host (the task's dir, while it runs).
      const task = await runnerOf(s.id);
      const workspace = join(stack.hostStateDir, 'tasks', basename(task.logPath, '.log'), 'workspace');
      expect(existsSync(join(workspace, 'e2e-note.txt')), `workspace ${workspace}`).toBe(true);
      expect(readFileSync(join(workspace, 'e2e-note.txt'), 'utf8')).toBe(content);
      // And the CLI sees it through its shell tool.
      const mid2 = await sendMessage(
        admin,
        s.id,
        offline({ tool: 'shell', command: 'cat e2e-note.txt' }, 'read it back'),
      );
      await sse.turnDone(mid2, TURN_MS);
      const res2 = turnEvents(sse, mid2).find((e) => e.event === 'tool.result');
      expect(String(res2?.data.output)).toContain(content);
      await sse.close();
      await sampleRunners();
      expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
    }),
    TURN_MS * 3,
  );

  it(
    `${backend}: interrupt a slow answer → turn.done interrupted within the deadline; 409 while busy`,
    dumpOnFail(async () => {
      const s = await createSession(admin);
      const mid = await sendMessage(
        admin,
        s.id,
        offline({ text: 'slow '.repeat(400), chunks: 400, delayMs: 100 }, 'be slow'),
      );
      const sse = await track(admin.events(s.id));
      await sse.waitFor('the first text.delta', (e) => e.event === 'text.delta' && e.data.messageId === mid, TURN_MS);
      // Busy: a second message is refused while the turn runs.
      const busy = await admin.call<{ error: { code: string } }>('POST', `/api/sessions/${s.id}/messages`, {
        text: 'while busy',
      });
      expect(busy.status, busy.text).toBe(409);
      expect(busy.body.error.code).toBe('conflict');
      const t0 = Date.now();
      const r = await admin.call('POST', `/api/sessions/${s.id}/interrupt`);
      expect(r.status, r.text).toBe(202);
      // The runner's deadline is 10 s before it kills the CLI; allow for a loaded machine.
      const done = await sse.turnDone(mid, 30_000);
      const took = Date.now() - t0;
      expect(done.data.stopReason).toBe('interrupted');
      expect(took).toBeLessThan(30_000);
      // Far fewer than 400 deltas: the answer really stopped.
      expect(turnEvents(sse, mid).filter((e) => e.event === 'text.delta').length).toBeLessThan(400);
      // The session serves the next message.
      const mid2 = await sendMessage(admin, s.id, `after the interrupt ${tag}`);
      await expectDone(sse, mid2, 'end_turn', TURN_MS);
      expect(sse.events.filter((e) => e.event === 'turn.done' && e.data.messageId === mid)).toHaveLength(1);
      // Nothing to interrupt now.
      expect((await admin.call('POST', `/api/sessions/${s.id}/interrupt`)).status).toBe(409);
      await sse.close();
      await sampleRunners();
      expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
    }),
    TURN_MS * 3,
  );

  it(
    `${backend}: 3 viewers see identical event ids; a reader reconnecting with Last-Event-ID 15+ times loses and doubles nothing`,
    dumpOnFail(async () => {
      const s = await createSession(admin);
      const viewers = await Promise.all([
        track(admin.events(s.id)),
        track(admin.events(s.id)),
        track(admin.events(s.id)),
      ]);
      const mid = await sendMessage(
        admin,
        s.id,
        offline({ text: 'x'.repeat(120), chunks: 120, delayMs: 40 }, 'stream steadily'),
      );
      // The reconnecting reader: reads a few events, drops the connection, resumes from its last id.
      const got: SseEvent[] = [];
      let reconnects = 0;
      let last: string | undefined;
      const deadline = Date.now() + TURN_MS;
      for (;;) {
        const r = await track(last === undefined ? admin.events(s.id) : admin.events(s.id, { lastEventId: last }));
        const k = 3 + (reconnects % 5);
        try {
          await until(
            `${k} events or the end`,
            () => r.events.length >= k || r.events.some((e) => e.event === 'turn.done' && e.data.messageId === mid),
            Math.max(1, deadline - Date.now()),
          );
        } finally {
          await r.close();
          h.streams.delete(r);
        }
        got.push(...r.events);
        last = got.at(-1)?.id ?? last;
        if (got.some((e) => e.event === 'turn.done' && e.data.messageId === mid)) break;
        reconnects++;
      }
      await Promise.all(viewers.map((v) => v.turnDone(mid, TURN_MS)));
      const ids = viewers.map((v) => idsThroughDone(v.events, mid));
      expect(ids[1]).toEqual(ids[0]);
      expect(ids[2]).toEqual(ids[0]);
      expect(viewers[0]?.events.filter((e) => e.event === 'text.delta' && e.data.messageId === mid)).toHaveLength(120);
      expect(reconnects).toBeGreaterThanOrEqual(15);
      // The reconnecting reader got exactly what an uninterrupted reader got: none lost, none doubled.
      const gotIds = got.map((e) => e.id);
      expect(new Set(gotIds).size).toBe(gotIds.length);
      expect(idsThroughDone(got, mid)).toEqual(ids[0]);
      expect(textOf(got.filter((e) => e.data.messageId === mid))).toBe('x'.repeat(120));
      // ?after= replays the same way as Last-Event-ID.
      const cut = ids[0]?.[5] as string;
      const after = await track(admin.events(s.id, { after: cut }));
      await after.turnDone(mid, 30_000);
      expect(idsThroughDone(after.events, mid)).toEqual(ids[0]?.slice(6));
      for (const v of [...viewers, after]) await v.close();
      await sampleRunners();
      expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
    }),
    TURN_MS * 3,
  );

  it(
    `${backend}: the runner process killed mid-turn → exactly one turn.done; the next message resumes with the earlier context`,
    dumpOnFail(async () => {
      const s = await createSession(admin);
      const word = `PELICAN-${backend}-${Date.now() % 100000}`;
      const sse = await track(admin.events(s.id));
      const m1 = await sendMessage(admin, s.id, `remember the word ${word}`);
      await expectDone(sse, m1, 'end_turn', TURN_MS);
      // Turn 2 streams slowly; the runner uploads turn 1's transcript within 5 s of its end
      // (DESIGN "Transcripts and resume"), so the kill comes after 30 deltas (≥ 6 s in).
      const m2 = await sendMessage(
        admin,
        s.id,
        offline({ text: 'y'.repeat(200), chunks: 200, delayMs: 200 }, 'slow turn to be killed'),
      );
      await sse.waitFor(
        '30 deltas of turn 2',
        (_e, _i, all) => all.filter((x) => x.event === 'text.delta' && x.data.messageId === m2).length >= 30,
        TURN_MS,
      );
      const task = await runnerOf(s.id);
      process.kill(task.pid as number, 'SIGKILL');
      const done = await sse.turnDone(m2, 60_000);
      expect(done.data.stopReason).toBe('error');
      // The hub reports the dead runner and the session settles; still exactly one turn.done.
      await until(
        'the session to leave busy',
        async () => {
          const r = await admin.call<{ state: string; turn: unknown }>('GET', `/api/sessions/${s.id}`);
          return r.body.turn === null && r.body.state !== 'busy';
        },
        60_000,
      );
      expect(sse.events.filter((e) => e.event === 'turn.done' && e.data.messageId === m2)).toHaveLength(1);
      // Turn 3 starts a new runner, which restores the conversation.
      // (pi: the new runner's workspace differs from the dead one's; pi refuses a session whose
      // stored cwd is gone unless the runner rehomes the header — this test caught that.)
      const marker = `what was the word ${tag}-${Date.now() % 100000}`;
      const m3 = await sendMessage(admin, s.id, marker);
      await expectDone(sse, m3, 'end_turn', TURN_MS);
      expect(sse.events.filter((e) => e.event === 'turn.done' && e.data.messageId === m2)).toHaveLength(1);
      expect(sse.events.filter((e) => e.event === 'turn.done')).toHaveLength(3);
      const reqs = (await offlineRequests(stack)).map((r) => JSON.stringify(r.body));
      const turn3 = reqs.filter((b) => b.includes(marker) && !b.includes('<session>'));
      expect(turn3.length, 'the offline model saw turn 3').toBeGreaterThan(0);
      expect(turn3.at(-1), 'turn 3 request carries turn 1 text').toContain(`remember the word ${word}`);
      const newTask = await runnerOf(s.id);
      expect(newTask.pid).not.toBe(task.pid);
      await sse.close();
      await sampleRunners();
      expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
    }),
    TURN_MS * 4,
  );
}

describe.sequential('end to end through HTTP', () => {
  let claudeSession: { id: string; backend: string };

  describe.sequential('claude (the default backend)', () => {
    it('the default backend is claude', async () => {
      const r = await admin.call<{ llmBackend: string }>('GET', '/api/settings');
      expect(r.status).toBe(200);
      expect(r.body.llmBackend).toBe('claude');
    });
    backendSuite('claude');
  });

  describe.sequential('users and bad input', () => {
    it(
      'a user cannot see another user’s session (404 on every route); admins can read it',
      dumpOnFail(async () => {
        const mine = await createSession(admin, 'admin only');
        const created = await admin.call('POST', '/api/admin/users', {
          username: 'e2e-bob',
          password: 'bob-password-long-enough',
          currentPassword: stack.admin.password,
        });
        expect(created.status, created.text).toBe(201);
        const bob = await Api.login(stack.url, 'e2e-bob', 'bob-password-long-enough');
        for (const [method, path, body] of [
          ['GET', `/api/sessions/${mine.id}`],
          ['DELETE', `/api/sessions/${mine.id}`],
          ['POST', `/api/sessions/${mine.id}/messages`, { text: 'hi' }],
          ['POST', `/api/sessions/${mine.id}/interrupt`],
          ['GET', `/api/sessions/${mine.id}/events`],
          ['GET', `/api/sessions/${mine.id}/transcript`],
        ] as Array<[string, string, unknown?]>) {
          const r = await bob.call<{ error: { code: string } }>(method, path, body);
          expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
          expect(r.body.error.code).toBe('not_found');
        }
        const list = await bob.call<{ sessions: Array<{ id: string }> }>('GET', '/api/sessions');
        expect(list.body.sessions.map((x) => x.id)).not.toContain(mine.id);
        // Bob's own session is his; the admin still sees (reads) it.
        const his = await createSession(bob);
        expect((await bob.call('GET', `/api/sessions/${his.id}`)).status).toBe(200);
        expect((await admin.call('GET', `/api/sessions/${his.id}`)).status).toBe(200);
        // Still there for the owner after bob's attempts.
        expect((await admin.call('GET', `/api/sessions/${mine.id}`)).status).toBe(200);
        expect((await admin.call('DELETE', `/api/sessions/${mine.id}`)).status).toBe(204);
        expect((await bob.call('DELETE', `/api/sessions/${his.id}`)).status).toBe(204);
      }),
      120_000,
    );

    it(
      'bad input to every session route gets its 4xx (400 naming the field, 401, 404, 409, 413)',
      dumpOnFail(async () => {
        const s = await createSession(admin);
        const anon = new Api(stack.url);
        const bad = new Api(stack.url, 'sy_not-a-real-token');
        const unknown = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
        const expectError = (
          r: { status: number; text: string; body: { error?: { code?: unknown; field?: unknown } } | undefined },
          status: number,
          field?: string,
        ) => {
          expect(r.status, r.text).toBe(status);
          expect(typeof r.body?.error?.code, r.text).toBe('string');
          if (field !== undefined) expect(r.body?.error?.field, r.text).toBe(field);
        };
        const routes: Array<[string, string, unknown?]> = [
          ['POST', '/api/sessions', {}],
          ['GET', '/api/sessions'],
          ['GET', `/api/sessions/${s.id}`],
          ['DELETE', `/api/sessions/${s.id}`],
          ['POST', `/api/sessions/${s.id}/messages`, { text: 'x' }],
          ['POST', `/api/sessions/${s.id}/interrupt`],
          ['GET', `/api/sessions/${s.id}/events`],
          ['GET', `/api/sessions/${s.id}/transcript`],
        ];
        for (const [m, p, b] of routes) {
          expectError(await anon.call(m, p, b), 401);
          expectError(await bad.call(m, p, b), 401);
          if (p !== '/api/sessions') {
            expectError(await admin.call(m, p.replace(s.id, unknown), b), 404);
            expectError(await admin.call(m, p.replace(s.id, 'not-a-ulid'), b), 404);
          }
        }
        // create
        expectError(await admin.call('POST', '/api/sessions', { title: 5 }), 400, 'title');
        expectError(await admin.call('POST', '/api/sessions', { title: '' }), 400, 'title');
        expectError(await admin.call('POST', '/api/sessions', { bogus: 1 }), 400, 'bogus');
        expectError(await admin.call('POST', '/api/sessions', undefined, { raw: '{not json' }), 400);
        expectError(await admin.call('POST', '/api/sessions', { title: 'x'.repeat(200_000) }), 413);
        // list
        expectError(await admin.call('GET', '/api/sessions?limit=0'), 400, 'limit');
        expectError(await admin.call('GET', '/api/sessions?cursor=nope'), 400, 'cursor');
        // messages
        expectError(await admin.call('POST', `/api/sessions/${s.id}/messages`, {}), 400, 'text');
        expectError(await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: '' }), 400, 'text');
        expectError(await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: 7 }), 400, 'text');
        expectError(
          await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: 'x', extra: true }),
          400,
          'extra',
        );
        expectError(
          await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: 'x', clientMessageId: 'has spaces' }),
          400,
          'clientMessageId',
        );
        expectError(await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: 'x'.repeat(1_100_000) }), 413);
        // Far over the limit, with a Content-Length and streamed without one: the 413 still arrives
        // (workerd resets a connection whose request body is left unread, which reached the client
        // as a 500 or a reset).
        const huge = 'x'.repeat(8_000_000);
        for (const chunked of [false, true]) {
          expectError(await admin.call('POST', `/api/sessions/${s.id}/messages`, { text: huge }, { chunked }), 413);
          expectError(await admin.call('POST', '/api/sessions', { title: huge }, { chunked }), 413);
          expectError(await admin.call('POST', '/api/tokens', { name: huge }, { chunked }), 413);
        }
        // events
        expectError(
          await admin.call('GET', `/api/sessions/${s.id}/events`, undefined, {
            headers: { 'last-event-id': 'garbage' },
          }),
          400,
          'Last-Event-ID',
        );
        expectError(await admin.call('GET', `/api/sessions/${s.id}/events?after=garbage`), 400, 'after');
        // interrupt with no turn
        expectError(await admin.call('POST', `/api/sessions/${s.id}/interrupt`), 409);
        // Nothing above started a turn or a runner.
        const detail = await admin.call<{ turn: unknown; runner: unknown }>('GET', `/api/sessions/${s.id}`);
        expect(detail.body.turn).toBeNull();
        expect(detail.body.runner).toBeNull();
        // clientMessageId: a retry returns the same messageId and starts nothing; 409 busy is covered with the interrupt test.
        const a = await admin.call<{ messageId: string; duplicate: boolean }>(
          'POST',
          `/api/sessions/${s.id}/messages`,
          { text: 'once', clientMessageId: 'retry-1' },
        );
        const b = await admin.call<{ messageId: string; duplicate: boolean }>(
          'POST',
          `/api/sessions/${s.id}/messages`,
          { text: 'once', clientMessageId: 'retry-1' },
        );
        expect(a.status).toBe(202);
        expect(b.status).toBe(202);
        expect(b.body).toEqual({ messageId: a.body.messageId, duplicate: true });
        const sse = await track(admin.events(s.id));
        await sse.turnDone(a.body.messageId, TURN_MS);
        expect(sse.events.filter((e) => e.event === 'message.user')).toHaveLength(1);
        await sse.close();
        await sampleRunners();
        expect((await admin.call('DELETE', `/api/sessions/${s.id}`)).status).toBe(204);
        expectError(await admin.call('GET', `/api/sessions/${s.id}`), 404);
      }),
      TURN_MS * 2,
    );
  });

  describe.sequential('switching the backend', () => {
    it(
      'as admin: new sessions use pi, the old one keeps claude',
      dumpOnFail(async () => {
        claudeSession = await createSession(admin, 'stays claude');
        expect(claudeSession.backend).toBe('claude');
        const m0 = await sendMessage(admin, claudeSession.id, 'before the switch');
        const sse = await track(admin.events(claudeSession.id));
        await sse.turnDone(m0, TURN_MS);
        const bob = await Api.login(stack.url, 'e2e-bob', 'bob-password-long-enough');
        expect((await bob.call('PUT', '/api/admin/settings', { llmBackend: 'pi' })).status).toBe(403);
        expect((await admin.call('PUT', '/api/admin/settings', { llmBackend: 'gpt' })).body).toMatchObject({
          error: { field: 'llmBackend' },
        });
        const put = await admin.call<{ llmBackend: string }>('PUT', '/api/admin/settings', { llmBackend: 'pi' });
        expect(put.status, put.text).toBe(200);
        expect(put.body.llmBackend).toBe('pi');
        const fresh = await createSession(admin, 'pi now');
        expect(fresh.backend).toBe('pi');
        expect((await admin.call<{ backend: string }>('GET', `/api/sessions/${claudeSession.id}`)).body.backend).toBe(
          'claude',
        );
        // The old session still runs claude (a new message after the switch).
        const m1 = await sendMessage(admin, claudeSession.id, 'after the switch');
        await sse.turnDone(m1, TURN_MS);
        expect(textOf(sse.ofMessage(m1))).toBe('Offline model reply to: after the switch');
        expect(sse.events.filter((e) => e.event === 'session.init').every((e) => e.data.backend === 'claude')).toBe(
          true,
        );
        // The new one runs pi.
        const sp = await track(admin.events(fresh.id));
        const m2 = await sendMessage(admin, fresh.id, 'hello pi');
        await sp.turnDone(m2, TURN_MS);
        expect(sp.events.find((e) => e.event === 'session.init')?.data.backend).toBe('pi');
        await sse.close();
        await sp.close();
        await sampleRunners();
        for (const id of [claudeSession.id, fresh.id])
          expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
      }),
      TURN_MS * 3,
    );
  });

  describe.sequential('pi (after the switch)', () => {
    backendSuite('pi');
  });
});
