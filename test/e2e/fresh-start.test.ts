// A new session's runner starts its CLI while it dials the hub (docs/DESIGN.md "Runner behaviour
// (serve)", SWITCHYARD_FRESH_SESSION), end to end through HTTP and SSE with the real CLIs on the
// offline model: the edge marks the first launch fresh, its runner answers the first message; once
// that runner has stopped, the next launch is not fresh and its runner resumes the conversation
// (the model sees turn 1) with the session's files in its workspace.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import {
  E2eHarness,
  liveTask,
  requestWith,
  runnerLog,
  sendMessage,
  offline,
  turnSaved,
} from '../helpers/e2e-harness.ts';
import type { Api } from '../helpers/sse-client.ts';
import { stopSessionRunner } from '../helpers/runner-tasks.ts';
import { WELCOME_RESTORE_LOG } from '../../runner/src/serve/welcome-rule.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

const h = new E2eHarness();
const { dumpOnFail } = h;
let stack: Stack;
let admin: Api;

beforeAll(async () => {
  ({ stack, admin } = await h.start('fresh-start'));
}, STACK_READY_MS);

afterAll(() => h.stop(), 120_000);

function freshSuite(backend: 'claude' | 'pi') {
  it(
    `${backend}: the first runner starts fresh and answers; after it stopped, the next one resumes the conversation and has the files`,
    dumpOnFail(async () => {
      const created = await admin.call<{ id: string; backend: string }>('POST', '/api/sessions', {});
      expect(created.body.backend).toBe(backend);
      const id = created.body.id;
      h.sessions.push(id);
      const sse = await admin.events(id);
      h.streams.add(sse);

      const marker1 = `first-${backend}-${Date.now()}`;
      const m1 = await sendMessage(
        admin,
        id,
        offline({ tool: 'write', path: 'kept.txt', content: `${marker1}\n` }, `remember ${marker1}`),
      );
      expect((await turnSaved(sse, m1, TURN_MS)).done.data.stopReason).toBe('end_turn');
      const first = await liveTask(stack, id);
      const firstLog = runnerLog(first);
      expect(firstLog.some((l) => l.msg === 'fresh session: starting the CLI while the hub link comes up')).toBe(true);
      // One CLI: the early one answered (no replacement, no second start).
      expect(firstLog.filter((l) => l.msg === 'cli started')).toHaveLength(1);
      expect(firstLog.some((l) => l.msg === WELCOME_RESTORE_LOG.replace)).toBe(false);

      // The runner stops (as ECS stops a task): bye, transcript and files durable, the session at rest.
      await stopSessionRunner(stack, admin, id, 60_000);

      const marker2 = `second-${backend}-${Date.now()}`;
      const m2 = await sendMessage(admin, id, offline({ tool: 'shell', command: 'cat kept.txt' }, `recall ${marker2}`));
      expect((await sse.turnDone(m2, TURN_MS)).data.stopReason).toBe('end_turn');
      const second = await liveTask(stack, id, first.taskArn);
      const secondLog = runnerLog(second);
      expect(secondLog.some((l) => l.msg?.startsWith('fresh session') === true)).toBe(false);
      expect(secondLog.some((l) => l.msg === 'transcript restored')).toBe(true);
      expect(secondLog.some((l) => l.msg === 'starting the CLI' && l.resume === true)).toBe(true);
      // The model's request for turn 2 carries turn 1; the file is in the new runner's workspace.
      expect(await requestWith(stack, marker2)).toContain(marker1);
      const results = sse
        .ofMessage(m2)
        .filter((e) => e.event === 'tool.result')
        .map((e) => String(e.data.output));
      expect(results.join('\n')).toContain(marker1);
      expect(
        existsSync(join(stack.hostStateDir, 'tasks', basename(second.logPath, '.log'), 'workspace', 'kept.txt')),
      ).toBe(true);
    }),
    TURN_MS * 3,
  );
}

describe('fresh session start, end to end', () => {
  freshSuite('claude');
  it('switch the backend to pi', async () => {
    const r = await admin.call('PUT', '/api/admin/settings', { llmBackend: 'pi' });
    expect(r.status, r.text).toBe(200);
  });
  freshSuite('pi');
});
