// Tool approvals end to end, through HTTP only (DESIGN "Tool approvals"): one stack the way
// `npm start` runs it, real claude behind real runners, the offline model scripted with
// `#offline` directives to ask for a write, a shell command and a read. Sessions are created in
// approval mode `ask`; every wait polls the SSE stream until a deadline.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { E2eHarness, offline, sendMessage } from '../helpers/e2e-harness.ts';
import { Api, until, type SseEvent, type SseStream } from '../helpers/sse-client.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

const h = new E2eHarness({ logLines: 60 });
const { dumpOnFail, track } = h;
let stack: Stack;
let admin: Api;

beforeAll(async () => {
  ({ stack, admin } = await h.start('approvals'));
}, STACK_READY_MS + 60_000);

afterAll(() => h.stop(), 120_000);

// Sessions are deleted after each test: a live runner per session counts against maxLiveRunnersPerUser.
afterEach(async () => {
  await h.closeStreams();
  await h.deleteSessions();
}, 60_000);

async function askSession(api: Api): Promise<string> {
  const r = await api.call<{ id: string; approvals: string }>('POST', '/api/sessions', { approvals: 'ask' });
  expect(r.status, r.text).toBe(201);
  expect(r.body.approvals).toBe('ask');
  h.sessions.push(r.body.id);
  return r.body.id;
}

/** Sends a message whose answer is `script` (a tool call to approve, mostly). */
function send(api: Api, sessionId: string, script: Record<string, unknown>, text = 'go'): Promise<string> {
  return sendMessage(api, sessionId, offline(script, text));
}

async function request(s: SseStream, messageId: string, timeoutMs = TURN_MS): Promise<SseEvent> {
  // A turn that ends first (a launch that failed, a guard refusal) fails at once, saying why.
  const e = await s.waitFor(
    'approval.request',
    (e) => (e.event === 'approval.request' || e.event === 'turn.done') && e.data.messageId === messageId,
    timeoutMs,
  );
  if (e.event === 'turn.done') throw new Error(`the turn ended before asking: ${JSON.stringify(e.data)}`);
  return e;
}

function resolved(s: SseStream, approvalId: unknown, timeoutMs = TURN_MS): Promise<SseEvent> {
  return s.waitFor(
    `approval.resolved of ${String(approvalId)}`,
    (e) => e.event === 'approval.resolved' && e.data.approvalId === approvalId,
    timeoutMs,
  );
}

function answer(api: Api, sessionId: string, approvalId: unknown, body: Record<string, unknown>) {
  return api.call<Record<string, unknown>>('POST', `/api/sessions/${sessionId}/approvals/${String(approvalId)}`, body);
}

function toolResult(s: SseStream, messageId: string): SseEvent | undefined {
  return s.events.find((e) => e.event === 'tool.result' && e.data.messageId === messageId);
}

/** A follow-up turn that reads `path` (the policy allows reads): its tool result says whether it exists. */
async function readBack(sse: SseStream, sessionId: string, path: string): Promise<SseEvent> {
  const m = await send(admin, sessionId, { tool: 'read', path }, 'read it back');
  await sse.turnDone(m, TURN_MS);
  const result = toolResult(sse, m);
  expect(result, sse.summary()).toBeDefined();
  return result as SseEvent;
}

const NAMES = {
  claude: { write: 'Write', shell: 'Bash', path: 'file_path' },
  pi: { write: 'write', shell: 'bash', path: 'path' },
} as const;

/** The same behaviours on either backend (sessions are pinned to the backend set at creation). */
function suite(backend: 'claude' | 'pi') {
  const names = NAMES[backend];
  it(`${backend}: new sessions run ${backend}`, async () => {
    const id = await askSession(admin);
    const r = await admin.call<{ backend: string }>('GET', `/api/sessions/${id}`);
    expect(r.body.backend).toBe(backend);
  });

  it(
    'allow: the write waits for a person, runs once allowed, and the file exists',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: 'allowed.txt', content: 'ALLOWED-CONTENT' });
      const req = await request(sse, m);
      expect(req.data).toMatchObject({ name: names.write, kind: 'write' });
      expect(String((req.data.input as Record<string, unknown>)[names.path])).toMatch(/allowed\.txt$/);
      expect(Date.parse(String(req.data.expiresAt))).toBeGreaterThan(Date.now());
      // Nothing ran yet: no tool result while the request is pending.
      expect(toolResult(sse, m)).toBeUndefined();
      const r = await answer(admin, id, req.data.approvalId, { decision: 'allow' });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ approvalId: req.data.approvalId, decision: 'allow', reason: 'user' });
      const res = await resolved(sse, req.data.approvalId);
      expect(res.data).toMatchObject({ decision: 'allow', reason: 'user', by: stack.admin.username });
      const done = await sse.turnDone(m, TURN_MS);
      expect(done.data.stopReason).toBe('end_turn');
      expect(toolResult(sse, m)?.data.isError).toBe(false);
      // Answering again: 409 with the first decision.
      const again = await answer(admin, id, req.data.approvalId, { decision: 'deny' });
      expect(again.status, again.text).toBe(409);
      expect(again.body.approval).toMatchObject({ decision: 'allow', reason: 'user' });
      const back = await readBack(sse, id, 'allowed.txt');
      expect(back.data.isError).toBe(false);
      expect(String(back.data.output)).toContain('ALLOWED-CONTENT');
    }),
    TURN_MS * 3,
  );

  it(
    'deny with a message: the tool result is an error carrying it, and the file does not exist',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: 'denied.txt', content: 'NOPE' });
      const req = await request(sse, m);
      const r = await answer(admin, id, req.data.approvalId, { decision: 'deny', message: 'not there: use notes/' });
      expect(r.status, r.text).toBe(200);
      await sse.turnDone(m, TURN_MS);
      const result = toolResult(sse, m);
      expect(result?.data.isError).toBe(true);
      expect(String(result?.data.output)).toContain('not there: use notes/');
      const back = await readBack(sse, id, 'denied.txt');
      expect(back.data.isError).toBe(true);
      expect(String(back.data.output)).not.toContain('NOPE');
    }),
    TURN_MS * 3,
  );

  it(
    'the guard runs first: a call it refuses is never put to a person, and its reason reaches the model',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: '.env', content: 'SECRET=1' });
      const done = await sse.turnDone(m, TURN_MS);
      expect(done.data.stopReason).toBe('end_turn');
      expect(sse.ofMessage(m).filter((e) => e.event.startsWith('approval.'))).toEqual([]);
      const result = toolResult(sse, m);
      expect(result?.data.isError).toBe(true);
      expect(String(result?.data.output)).toContain('switchyard guard:');
    }),
    TURN_MS,
  );

  it(
    'a shell command waits too; two viewers see it, one answers, both see it resolved; a reconnecting viewer replays the pending request and answers it',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const one = await track(admin.events(id));
      const two = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'shell', command: 'echo SHELL-RAN > ran.txt' });
      const req = await request(one, m);
      expect(req.data).toMatchObject({ name: names.shell, kind: 'shell' });
      await request(two, m);
      // A viewer that connects mid-wait gets the pending request by replay and answers it.
      const late = await track(admin.events(id));
      const replayed = await request(late, m);
      expect(replayed.id).toBe(req.id);
      expect((await answer(admin, id, replayed.data.approvalId, { decision: 'allow' })).status).toBe(200);
      for (const s of [one, two, late]) expect((await resolved(s, req.data.approvalId)).data.decision).toBe('allow');
      await one.turnDone(m, TURN_MS);
      expect(toolResult(one, m)?.data.isError).toBe(false);
    }),
    TURN_MS * 2,
  );

  it(
    'another user gets 404, and an unknown approval is 404',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: 'x.txt', content: 'x' });
      const req = await request(sse, m);
      const created = await admin.call('POST', '/api/admin/users', {
        username: `approvals-eve-${backend}`,
        password: 'eve-password-long-enough',
        currentPassword: stack.admin.password,
      });
      expect(created.status, created.text).toBe(201);
      const eve = await Api.login(stack.url, `approvals-eve-${backend}`, 'eve-password-long-enough');
      const r = await answer(eve, id, req.data.approvalId, { decision: 'allow' });
      expect(r.status, r.text).toBe(404);
      expect((await answer(admin, id, 'no-such-approval', { decision: 'allow' })).status).toBe(404);
      expect((await answer(admin, id, req.data.approvalId, { decision: 'maybe' })).status).toBe(400);
      // Still pending for its owner.
      expect((await answer(admin, id, req.data.approvalId, { decision: 'deny' })).status).toBe(200);
      await sse.turnDone(m, TURN_MS);
    }),
    TURN_MS * 2,
  );

  it(
    'policy: a read is allowed without a person (request, then resolved by policy)',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'read', path: 'missing-or-not.txt' });
      const req = await request(sse, m);
      expect(req.data.kind).toBe('read');
      const res = await resolved(sse, req.data.approvalId);
      expect(res.data).toMatchObject({ decision: 'allow', reason: 'policy' });
      expect(res.data.by).toBeUndefined();
      // Logged right after its request.
      const i = sse.events.indexOf(req);
      expect(sse.events[i + 1]?.event).toBe('approval.resolved');
      await sse.turnDone(m, TURN_MS);
    }),
    TURN_MS,
  );

  it(
    'interrupt while waiting: the approval resolves as interrupted and the turn ends interrupted',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: 'int.txt', content: 'x' });
      const req = await request(sse, m);
      expect((await admin.call('POST', `/api/sessions/${id}/interrupt`)).status).toBe(202);
      const res = await resolved(sse, req.data.approvalId);
      expect(res.data).toMatchObject({ decision: 'deny', reason: 'interrupted' });
      expect((await sse.turnDone(m, 60_000)).data.stopReason).toBe('interrupted');
      const late = await answer(admin, id, req.data.approvalId, { decision: 'allow' });
      expect(late.status).toBe(409);
      expect(late.body.approval).toMatchObject({ reason: 'interrupted' });
    }),
    TURN_MS,
  );

  it(
    'expiry: nobody answers within approvalTimeoutSeconds → deny (expired), the model reads why',
    dumpOnFail(async () => {
      const put = await admin.call('PUT', '/api/admin/settings', { approvalTimeoutSeconds: 5 });
      expect(put.status, put.text).toBe(200);
      try {
        const id = await askSession(admin);
        const sse = await track(admin.events(id));
        const m = await send(admin, id, { tool: 'write', path: 'late.txt', content: 'x' });
        const req = await request(sse, m);
        const res = await resolved(sse, req.data.approvalId, 60_000);
        expect(res.data).toMatchObject({ decision: 'deny', reason: 'expired' });
        await sse.turnDone(m, TURN_MS);
        const result = toolResult(sse, m);
        expect(result?.data.isError).toBe(true);
        expect(String(result?.data.output)).toContain('in time');
      } finally {
        await admin.call('PUT', '/api/admin/settings', { approvalTimeoutSeconds: 300 });
      }
    }),
    TURN_MS * 2,
  );

  it(
    'the runner killed while waiting: the approval resolves as runner_lost and the turn ends',
    dumpOnFail(async () => {
      const id = await askSession(admin);
      const sse = await track(admin.events(id));
      const m = await send(admin, id, { tool: 'write', path: 'lost.txt', content: 'x' });
      const req = await request(sse, m);
      const task = await until(
        'the runner task',
        async () => (await stack.runners()).find((t) => t.sessionId === id && t.pid !== null),
        60_000,
      );
      process.kill(task.pid as number, 'SIGKILL');
      const res = await resolved(sse, req.data.approvalId, TURN_MS);
      expect(res.data).toMatchObject({ decision: 'deny', reason: 'runner_lost' });
      expect((await sse.turnDone(m, TURN_MS)).data.stopReason).toBe('error');
    }),
    TURN_MS * 2,
  );
}

describe.sequential('tool approvals', () => {
  describe.sequential('claude', () => suite('claude'));
  describe.sequential('pi', () => {
    it(
      'the admin switches new sessions to pi',
      async () => {
        const put = await admin.call<{ llmBackend: string }>('PUT', '/api/admin/settings', { llmBackend: 'pi' });
        expect(put.status, put.text).toBe(200);
      },
      TURN_MS,
    );
    suite('pi');
  });
});
