// The warm runner pool end to end, through HTTP only: the stack `npm start` runs (wrangler dev,
// the local runner host, the offline model), real runners in pooled mode with real claude and pi
// CLIs. The host simulates a provisioning delay, so a cold launch is visibly slower; nothing here
// measures it (that is bench/e2e/pool.ts): a session's runner counts as pooled by its identity
// (the pooled runner id and the task tagged `switchyard:pool`), never by timing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import {
  E2eHarness,
  offline,
  requestWith,
  runnerLog,
  sendMessage,
  toolOutput,
  turnSaved,
} from '../helpers/e2e-harness.ts';
import { startGitServer, type GitServer } from '../helpers/git-server.ts';
import { type Api, textOf, until } from '../helpers/sse-client.ts';
import { stopSessionRunner } from '../helpers/runner-tasks.ts';
import { WELCOME_RESTORE_LOG } from '../../runner/src/serve/welcome-rule.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;
const FILL_MS = 180_000;
/** Long enough to tell apart from a pooled start, short enough for a test run. */
const PROVISION_DELAY_MS = 3_000;

interface PoolStatus {
  sizes: { claude: number; pi: number };
  runners: Array<{ id: string; backend: string; ref: string | null; state: 'launching' | 'idle' }>;
}

const h = new E2eHarness();
const { dumpOnFail } = h;
let stack: Stack;
let admin: Api;
let git: GitServer;

beforeAll(async () => {
  git = await startGitServer();
  ({ stack, admin } = await h.start('pool', { provisionDelayMs: PROVISION_DELAY_MS }));
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await h.stop();
  await git?.stop();
}, 120_000);

async function pool(): Promise<PoolStatus> {
  const r = await admin.call<PoolStatus>('GET', '/api/admin/runner-pool');
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function setPool(sizes: Partial<PoolStatus['sizes']>): Promise<PoolStatus> {
  const r = await admin.call<PoolStatus>('PUT', '/api/admin/runner-pool', sizes);
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function idle(backend: string, n: number): Promise<PoolStatus['runners']> {
  return until(
    `${n} idle pooled ${backend} runner(s)`,
    async () => {
      const runners = (await pool()).runners.filter((r) => r.backend === backend && r.state === 'idle');
      return runners.length === n ? runners : undefined;
    },
    FILL_MS,
  );
}

async function session(): Promise<string> {
  const r = await admin.call<{ id: string }>('POST', '/api/sessions', {});
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

/** Sends a message and waits for its answer; returns the session's runner and the message id. */
async function firstTurn(sessionId: string, text: string) {
  const sse = await admin.events(sessionId);
  h.streams.add(sse);
  const r = await admin.call<{ messageId: string }>('POST', `/api/sessions/${sessionId}/messages`, {
    text: offline({ text: `echo: ${text}` }, text),
  });
  expect(r.status, r.text).toBe(202);
  const done = await sse.turnDone(r.body.messageId, TURN_MS);
  expect(done.data.stopReason).toBe('end_turn');
  expect(textOf(sse.ofMessage(r.body.messageId))).toContain(`echo: ${text}`);
  return { ...(await runnerOf(sessionId)), messageId: r.body.messageId };
}

async function hostTask(ref: string) {
  const task = (await stack.runners()).find((t) => t.taskArn === ref);
  if (task === undefined) throw new Error(`no host task ${ref}`);
  return task;
}

async function taskTags(ref: string): Promise<Record<string, string>> {
  return (await hostTask(ref)).tags;
}

async function runnerOf(sessionId: string): Promise<{ ref: string; runnerId: string }> {
  const detail = await admin.call<{ runner: { ref: string | null; runnerId: string | null } | null }>(
    'GET',
    `/api/sessions/${sessionId}`,
  );
  const runner = detail.body.runner;
  if (runner?.ref == null || runner.runnerId === null) throw new Error('the session has no runner');
  return { ref: runner.ref, runnerId: runner.runnerId };
}

/** What the runner logs when the welcome's rule takes its prewarmed CLI: claude replaced, pi reloaded. */
function earlyCliSaid(backend: 'claude' | 'pi'): string {
  return WELCOME_RESTORE_LOG[backend === 'pi' ? 'reload' : 'replace'];
}

/**
 * A session that stopped takes a pooled runner for its next message: no provisioning wait, and
 * the runner replaces its prewarmed CLI with one that resumes the conversation (claude), or
 * reloads it onto the conversation (pi), files in place.
 */
async function resumedTakesPooled(backend: 'claude' | 'pi'): Promise<void> {
  const id = await session();
  const sse = await admin.events(id);
  h.streams.add(sse);
  const marker1 = `kept-${backend}-${Date.now()}`;
  const m1 = await sendMessage(
    admin,
    id,
    offline({ tool: 'write', path: 'kept.txt', content: `${marker1}\n` }, `remember ${marker1}`),
  );
  expect((await turnSaved(sse, m1, TURN_MS)).done.data.stopReason).toBe('end_turn');
  // The runner stops (as ECS stops a task): transcript and files durable, the session at rest.
  await stopSessionRunner(stack, admin, id, 60_000);
  const pooled = await idle(backend, (await pool()).sizes[backend]);

  const marker2 = `recall-${backend}-${Date.now()}`;
  const m2 = await sendMessage(admin, id, offline({ tool: 'shell', command: 'cat kept.txt' }, `recall ${marker2}`));
  expect((await sse.turnDone(m2, TURN_MS)).data.stopReason).toBe('end_turn');
  const second = await runnerOf(id);
  expect(pooled.map((r) => r.id)).toContain(second.runnerId);
  expect((await taskTags(second.ref))['switchyard:pool']).toBe(second.runnerId);
  const log = runnerLog(await hostTask(second.ref));
  const said = log.map((l) => l.msg);
  expect(said).toContain('transcript restored');
  expect(said).toContain(earlyCliSaid(backend));
  if (backend === 'claude') {
    expect(log.some((l) => l.msg === 'starting the CLI' && l.resume === true)).toBe(true);
  } else {
    // One CLI, the prewarmed one, switched onto the restored conversation.
    expect(log.some((l) => l.msg === 'reloading the CLI' && l.resume === true)).toBe(true);
    expect(log.filter((l) => l.msg === 'cli started')).toHaveLength(1);
    // Every session.init names the one conversation; the pi session the prewarmed CLI had started
    // in before the claim (its warm-up's) never reached the session's log.
    const inits = sse.events.filter((e) => e.event === 'session.init').map((e) => e.data.cliSessionId);
    expect(inits.length).toBeGreaterThan(1);
    expect(new Set(inits)).toEqual(new Set([inits[0]]));
  }
  // The model's request for the second message carries the first; the file is in the workspace.
  expect(await requestWith(stack, marker2)).toContain(marker1);
  expect(toolOutput(sse, m2)).toContain(marker1);
  // Its live runner would count against the user's cap in the tests that follow.
  expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
}

/**
 * A new session from a repository takes a pooled runner: the welcome names the repository, and
 * the runner clones it before its CLI takes the first message (claude replaced, pi reloaded).
 */
async function repositoryTakesPooled(backend: 'claude' | 'pi'): Promise<void> {
  const pooled = await idle(backend, (await pool()).sizes[backend]);
  const created = await admin.call<{ id: string }>('POST', '/api/sessions', { repository: { url: git.url } });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id;
  const sse = await admin.events(id);
  h.streams.add(sse);
  const m = await sendMessage(admin, id, offline({ tool: 'shell', command: 'cat src/greeting.txt' }, 'read the clone'));
  expect((await sse.turnDone(m, TURN_MS)).data.stopReason).toBe('end_turn');
  expect(toolOutput(sse, m)).toContain('hello from main');
  const runner = await runnerOf(id);
  expect(pooled.map((r) => r.id)).toContain(runner.runnerId);
  const said = runnerLog(await hostTask(runner.ref)).map((l) => l.msg);
  expect(said).toContain(earlyCliSaid(backend));
  expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
}

describe('warm runner pool (real runners, real CLIs)', () => {
  it(
    'size 0 is the default: no pooled runner, the first message launches cold',
    dumpOnFail(async () => {
      expect(await pool()).toEqual({ sizes: { claude: 0, pi: 0 }, runners: [] });
      const id = await session();
      const runner = await firstTurn(id, 'cold start');
      expect(await taskTags(runner.ref as string)).not.toHaveProperty('switchyard:pool');
      expect((await stack.runners()).filter((t) => 'switchyard:pool' in t.tags)).toEqual([]);
    }),
    TURN_MS + 60_000,
  );

  it(
    'fills to N; a new session takes a pooled runner (its CLI already up) and the pool refills',
    dumpOnFail(async () => {
      await setPool({ claude: 2 });
      const before = await idle('claude', 2);
      const id = await session();
      const runner = await firstTurn(id, 'warm start');
      // The session's runner is one of the pooled ones: same runner id, the pooled task.
      expect(before.map((r) => r.id)).toContain(runner.runnerId);
      expect(before.map((r) => r.ref)).toContain(runner.ref);
      expect((await taskTags(runner.ref as string))['switchyard:pool']).toBe(runner.runnerId);
      // The first message went with the claim and the hub's copy after the welcome was a duplicate:
      // it ran once (a second run would hold the runner busy or end the same message twice), and
      // the same runner takes the next message.
      const next = await firstTurn(id, 'after the claim');
      expect(next.runnerId).toBe(runner.runnerId);
      const log = await admin.events(id);
      h.streams.add(log);
      await log.turnDone(next.messageId, TURN_MS);
      expect(log.ofMessage(runner.messageId).filter((e) => e.event === 'turn.done')).toHaveLength(1);
      // Never reused: it left the pool, and a fresh one took its place.
      const after = await idle('claude', 2);
      expect(after.map((r) => r.id)).not.toContain(runner.runnerId);
    }),
    FILL_MS + TURN_MS,
  );

  it(
    'two sessions at once never share a pooled runner',
    dumpOnFail(async () => {
      await idle('claude', 2);
      const [a, b] = await Promise.all([session(), session()]);
      const [ra, rb] = await Promise.all([firstTurn(a, 'first of two'), firstTurn(b, 'second of two')]);
      expect(ra.runnerId).not.toBe(rb.runnerId);
      expect(ra.ref).not.toBe(rb.ref);
    }),
    FILL_MS + TURN_MS,
  );

  it(
    'claude: a stopped session takes a pooled runner for its next message and resumes the conversation',
    dumpOnFail(() => resumedTakesPooled('claude')),
    FILL_MS + 3 * TURN_MS,
  );

  it(
    'claude: a session from a repository takes a pooled runner, which clones it before the first message',
    dumpOnFail(() => repositoryTakesPooled('claude')),
    FILL_MS + TURN_MS,
  );

  it(
    'claude: a session in approval mode ask takes a pooled runner, and its write waits for a person',
    dumpOnFail(async () => {
      const size = Math.max((await pool()).sizes.claude, 1);
      await setPool({ claude: size });
      const pooled = await idle('claude', size);
      const created = await admin.call<{ id: string }>('POST', '/api/sessions', { approvals: 'ask' });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;
      const sse = await admin.events(id);
      h.streams.add(sse);
      const m = await sendMessage(admin, id, offline({ tool: 'write', path: 'asked.txt', content: 'ASKED' }, 'go'));
      // The prewarmed CLI, whose hooks do not ask, was replaced: the write is put to a person first.
      const first = await sse.waitFor(
        'an approval request or a tool result',
        (e) => (e.event === 'approval.request' || e.event === 'tool.result') && e.data.messageId === m,
        TURN_MS,
      );
      expect(first.event, sse.summary()).toBe('approval.request');
      const runner = await runnerOf(id);
      expect(pooled.map((r) => r.id)).toContain(runner.runnerId);
      const r = await admin.call('POST', `/api/sessions/${id}/approvals/${String(first.data.approvalId)}`, {
        decision: 'deny',
      });
      expect(r.status, r.text).toBe(200);
      expect((await sse.turnDone(m, TURN_MS)).data.stopReason).toBe('end_turn');
      expect(toolOutput(sse, m)).not.toContain('ASKED');
      expect(runnerLog(await hostTask(runner.ref)).map((l) => l.msg)).toContain(earlyCliSaid('claude'));
      expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
    }),
    FILL_MS + 2 * TURN_MS,
  );

  it(
    'a pooled runner whose CLI dies while it waits leaves the pool and is replaced',
    dumpOnFail(async () => {
      const [victim] = await idle('claude', 2);
      if (victim?.ref == null) throw new Error('no idle pooled runner');
      const task = (await stack.runners()).find((t) => t.taskArn === victim.ref);
      const cliGroups = (task?.groups ?? []).filter((g) => g !== task?.pid);
      expect(cliGroups.length).toBeGreaterThan(0);
      for (const g of cliGroups) process.kill(-g, 'SIGKILL');
      await until(
        'the runner to leave the pool',
        async () => !(await pool()).runners.some((r) => r.id === victim.id),
        60_000,
      );
      await until(
        'its task to stop',
        async () => (await stack.runners()).find((t) => t.taskArn === victim.ref)?.lastStatus === 'STOPPED',
        60_000,
      );
      const after = await idle('claude', 2);
      expect(after.map((r) => r.id)).not.toContain(victim.id);
    }),
    FILL_MS + 60_000,
  );

  it(
    'the backend switch drains the old backend; size 0 drains the rest',
    dumpOnFail(async () => {
      await setPool({ claude: 1, pi: 1 });
      const claude = await idle('claude', 1);
      const r = await admin.call('PUT', '/api/admin/settings', { llmBackend: 'pi' });
      expect(r.status, r.text).toBe(200);
      const pi = await idle('pi', 1);
      expect((await pool()).runners.filter((x) => x.backend === 'claude')).toEqual([]);
      await until(
        'the drained claude tasks to stop',
        async () => {
          const tasks = await stack.runners();
          return claude.every((c) => tasks.find((t) => t.taskArn === c.ref)?.lastStatus === 'STOPPED');
        },
        60_000,
      );
      // A pi session takes the pooled pi runner.
      const id = await session();
      const runner = await firstTurn(id, 'pi warm start');
      expect(runner.runnerId).toBe(pi[0]?.id);
      expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
      await resumedTakesPooled('pi');
      await repositoryTakesPooled('pi');

      await setPool({ claude: 0, pi: 0 });
      await until('an empty pool', async () => (await pool()).runners.length === 0, 60_000);
      await admin.call('PUT', '/api/admin/settings', { llmBackend: 'claude' });
    }),
    4 * FILL_MS + 5 * TURN_MS,
  );
});
