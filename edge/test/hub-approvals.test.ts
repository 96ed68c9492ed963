import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { RunnerCloseCode, type AgentEvent } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import type { ApprovalResolutionSchema } from '../src/sessions/approval-routes.ts';
import type { Session } from '../src/sessions/schemas.ts';
import {
  call,
  FakeRunner,
  hubContext,
  hubStub,
  launchAndConnect,
  until,
  type ErrorResponse,
  type HubTestContext,
  type SessionDetail,
} from './hub-helpers.ts';

// Tool approvals in the session hub (DESIGN "Tool approvals"): a scripted runner sends
// approval.request events; real workerd, D1 and the Durable Object's SQLite; the clock is moved
// and the alarm run instead of waiting for expiry.

afterEach(() => setHubRuntimeForTests({}));

type ApprovalResolution = z.infer<typeof ApprovalResolutionSchema>;
/** The 409 for an approval already resolved: the first decision stands. */
type ApprovalConflict = ErrorResponse & { approval: ApprovalResolution };

async function askSession(ctx: HubTestContext): Promise<string> {
  const r = await call<Session>(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body: { approvals: 'ask' } });
  expect(r.status, r.text).toBe(201);
  expect(r.body.approvals).toBe('ask');
  return r.body.id;
}

async function accepted(runner: FakeRunner): Promise<string> {
  const um = await runner.waitFor('user_message');
  runner.send({ type: 'accepted', inReplyTo: um.messageId });
  return um.messageId;
}

const request = (approvalId: string, name = 'Write', kind: 'read' | 'write' = 'write'): AgentEvent => ({
  type: 'approval.request',
  approvalId,
  toolId: `toolu-${approvalId}`,
  name,
  kind,
  input: { file_path: '/w/a.txt' },
  // What a runner's clock says; the hub replaces it.
  expiresAt: '2000-01-01T00:00:00.000Z',
});

async function logged(sid: string, type: string): Promise<Array<Record<string, unknown>>> {
  const rows = await runInDurableObject(hubStub(sid), (_hub, state) =>
    state.storage.sql.exec<{ data: string }>('SELECT data FROM events WHERE type = ? ORDER BY id', type).toArray(),
  );
  return rows.map((r) => JSON.parse(r.data) as Record<string, unknown>);
}

/** `B`: the body the test expects; the resolution by default. */
function answer<B = ApprovalResolution>(
  ctx: HubTestContext,
  sid: string,
  approvalId: string,
  body: Record<string, unknown>,
) {
  return call<B>(ctx.app, 'POST', `/api/sessions/${sid}/approvals/${approvalId}`, { token: ctx.token, body });
}

describe('session hub: tool approvals', () => {
  it('tells the runner the mode; stamps the expiry with its own clock; the policy allows a read at once', async () => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    expect(runner.of('welcome')[0]?.approvals).toBe('ask');
    const mid = await accepted(runner);
    const seqs = runner.events([request('r1', 'Read', 'read'), request('w1')], mid);
    await runner.waitAck(seqs.at(-1) as number);
    const requests = await logged(sid, 'approval.request');
    expect(requests.map((r) => r.expiresAt)).toEqual([
      new Date(ctx.clock.now() + 300_000).toISOString(),
      new Date(ctx.clock.now() + 300_000).toISOString(),
    ]);
    expect(requests[0]?.messageId).toBe(mid);
    const decision = await runner.waitFor('approval_decision', (d) => d.approvalId === 'r1');
    expect(decision).toEqual({ type: 'approval_decision', approvalId: 'r1', decision: 'allow' });
    expect(await logged(sid, 'approval.resolved')).toEqual([
      { type: 'approval.resolved', approvalId: 'r1', decision: 'allow', reason: 'policy', messageId: mid },
    ]);
    // The write waits for a person.
    expect(runner.of('approval_decision').map((d) => d.approvalId)).toEqual(['r1']);
    // Audited too, with no person as actor.
    const audit = await until('the policy decision in the audit log', async () => {
      const { results } = await env.DB.prepare(
        "SELECT actor_id, target, after FROM audit_log WHERE action = 'approval.decide'",
      ).all<{ actor_id: string | null; target: string; after: string }>();
      return results.length > 0 ? results : undefined;
    });
    expect(audit[0]?.actor_id).toBeNull();
    expect(audit[0]?.target).toBe(`session:${sid}`);
    expect(JSON.parse(audit[0]?.after ?? '{}')).toMatchObject({
      approvalId: 'r1',
      decision: 'allow',
      reason: 'policy',
    });
    runner.close();
  });

  it('a decision made while the link is down is sent after the next welcome, until the runner accepts it', async () => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await accepted(runner);
    const [seq] = runner.events([request('w1')], mid);
    await runner.waitAck(seq as number);
    const token = runner.of('welcome')[0]?.runnerToken ?? '';
    runner.ws.close(1001, 'going away');
    await until('the hub to see the link down', async () => {
      const r = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
      return r.body.runner?.connected === false;
    });
    const r = await answer(ctx, sid, 'w1', { decision: 'deny', message: 'use b.txt' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({
      approvalId: 'w1',
      decision: 'deny',
      reason: 'user',
      by: ctx.user.username,
      message: 'use b.txt',
    });
    const again = await FakeRunner.connect(ctx.app, { token, sessionId: sid, runnerId: runner.runnerId });
    again.seq = runner.seq;
    again.hello(sid);
    const d = await again.waitFor('approval_decision');
    expect(d).toEqual({ type: 'approval_decision', approvalId: 'w1', decision: 'deny', message: 'use b.txt' });
    again.send({ type: 'accepted', inReplyTo: 'w1' });
    // Accepted: a later reconnect does not send it again.
    await until('the delivery to be recorded', () =>
      runInDurableObject(hubStub(sid), (_h, state) =>
        state.storage.sql.exec<{ delivered: number }>("SELECT delivered FROM approvals WHERE id = 'w1'").one()
          .delivered === 1
          ? true
          : undefined,
      ),
    );
    const token2 = again.of('welcome')[0]?.runnerToken ?? '';
    again.ws.close(1001, 'going away');
    await until('the hub to see the link down', async () => {
      const s = await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${sid}`, { token: ctx.token });
      return s.body.runner?.connected === false;
    });
    const third = await FakeRunner.connect(ctx.app, { token: token2, sessionId: sid, runnerId: runner.runnerId });
    third.seq = runner.seq;
    third.hello(sid);
    await third.waitFor('welcome');
    expect(third.of('approval_decision')).toEqual([]);
    // The first answer stands.
    const late = await answer<ApprovalConflict>(ctx, sid, 'w1', { decision: 'allow' });
    expect(late.status).toBe(409);
    expect(late.body.approval).toMatchObject({ decision: 'deny', reason: 'user' });
    third.close();
  });

  it('several approvals wait at once (parallel tool calls) and each resolves on its own', async () => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await accepted(runner);
    const seqs = runner.events([request('p1'), request('p2'), request('p3')], mid);
    await runner.waitAck(seqs.at(-1) as number);
    expect((await answer(ctx, sid, 'p2', { decision: 'deny' })).status).toBe(200);
    expect((await answer(ctx, sid, 'p1', { decision: 'allow' })).status).toBe(200);
    await runner.waitFor('approval_decision', (d) => d.approvalId === 'p1');
    expect(runner.of('approval_decision').map((d) => [d.approvalId, d.decision])).toEqual([
      ['p2', 'deny'],
      ['p1', 'allow'],
    ]);
    // p3 still waits; the turn ending resolves it.
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await until('p3 to resolve', async () =>
      (await logged(sid, 'approval.resolved')).find((r) => r.approvalId === 'p3'),
    );
    expect((await logged(sid, 'approval.resolved')).map((r) => [r.approvalId, r.reason])).toEqual([
      ['p2', 'user'],
      ['p1', 'user'],
      ['p3', 'runner_lost'],
    ]);
    runner.close();
  });

  it('expires on the alarm: deny, reason expired, a message for the model', async () => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await accepted(runner);
    const [seq] = runner.events([request('w1')], mid);
    await runner.waitAck(seq as number);
    ctx.clock.advance(299_000);
    await runDurableObjectAlarm(hubStub(sid));
    expect(await logged(sid, 'approval.resolved')).toEqual([]);
    ctx.clock.advance(2_000);
    await runDurableObjectAlarm(hubStub(sid));
    const d = await runner.waitFor('approval_decision');
    expect(d).toMatchObject({ approvalId: 'w1', decision: 'deny' });
    expect(d.message).toMatch(/in time/);
    expect(await logged(sid, 'approval.resolved')).toMatchObject([{ approvalId: 'w1', reason: 'expired' }]);
    runner.close();
  });

  it('an unknown approval is 404; a bad decision is 400 naming it; a runner may not resolve approvals', async () => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await accepted(runner);
    expect((await answer(ctx, sid, 'nope', { decision: 'allow' })).status).toBe(404);
    const bad = await answer<ErrorResponse>(ctx, sid, 'nope', { decision: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('decision');
    runner.events([{ type: 'approval.resolved', approvalId: 'x', decision: 'allow', reason: 'user' }], mid);
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
  });

  // The attack: a runner asks again under the id of a question already answered, so viewers show a
  // second pending card for it (its answer gets 409), or asks one id twice in a batch.
  it.each([
    ['under the id of an answered approval', ['w1']],
    ['twice in one batch', []],
  ])('a runner asking again %s: protocol error, nothing more logged, the answer stands', async (_name, first) => {
    const ctx = await hubContext();
    const sid = await askSession(ctx);
    const { runner } = await launchAndConnect(ctx, sid);
    const mid = await accepted(runner);
    for (const id of first) {
      const [seq] = runner.events([request(id)], mid);
      await runner.waitAck(seq as number);
      expect((await answer(ctx, sid, id, { decision: 'deny' })).status).toBe(200);
      await runner.waitFor('approval_decision', (d) => d.approvalId === id);
    }
    const before = await logged(sid, 'approval.request');
    runner.events(first.length > 0 ? [request('w1')] : [request('w2'), request('w2')], mid);
    expect((await runner.waitClosed()).code).toBe(RunnerCloseCode.protocolError);
    expect(await logged(sid, 'approval.request')).toEqual(before);
    if (first.length > 0) {
      const late = await answer<ApprovalConflict>(ctx, sid, 'w1', { decision: 'allow' });
      expect(late.body.approval).toMatchObject({ decision: 'deny', reason: 'user' });
    }
  });
});
