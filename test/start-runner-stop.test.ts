// The whole local path the way `npm start` wires it — edge → ECS launcher → runner host →
// `switchyard-runner serve` → claude → offline model — and then a StopTask in the middle of a
// streaming answer: the runner, the CLI it started in a process group of its own (under
// bubblewrap) and everything below them must be gone once the host reports STOPPED.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTasksCommand, ECSClient, StopTaskCommand } from '@aws-sdk/client-ecs';
import { afterAll, expect, it } from 'vitest';
import { liveInGroups } from '@switchyard/runner/host';
import { startStack, type Stack } from '../scripts/start.ts';
import { until } from './helpers/poll.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `switchyard-stop-${name}-`));
  dirs.push(d);
  return d;
};

it('StopTask mid-turn ends the runner and its CLI process groups: nothing left', async () => {
  const lines: string[] = [];
  let stack: Stack | undefined;
  const sse = new AbortController();
  try {
    stack = await startStack({
      port: 0,
      frozenEdge: true,
      devDir: tempDir('dev'),
      persistTo: tempDir('state'),
      env: { ...process.env, ANTHROPIC_API_KEY: '', SWITCHYARD_MODEL_URL: '', SWITCHYARD_ADMIN_PASSWORD: '' },
      taskStopTimeoutMs: 5_000,
      output: (name, _s, line) => lines.push(`[${name}] ${line}`),
      log: (line) => lines.push(line),
    });
    const s = stack;
    const json = { 'content-type': 'application/json' };
    const login = (await (
      await fetch(`${s.url}/api/auth/login`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ username: s.admin.username, password: s.admin.password }),
      })
    ).json()) as { token: string };
    const auth = { ...json, authorization: `Bearer ${login.token}` };
    const session = (await (
      await fetch(`${s.url}/api/sessions`, { method: 'POST', headers: auth, body: '{}' })
    ).json()) as { id: string };
    expect(session.id).toBeTruthy();

    // Watch the session until the answer is streaming.
    const events = await fetch(`${s.url}/api/sessions/${session.id}/events`, { headers: auth, signal: sse.signal });
    let text = '';
    const reader = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of events.body as unknown as AsyncIterable<Uint8Array>)
          text += decoder.decode(chunk, { stream: true });
      } catch {
        // aborted
      }
    })();
    const slow = '#offline {"text":"a slow answer that streams for a long time","chunks":300,"delayMs":100}';
    const sent = await fetch(`${s.url}/api/sessions/${session.id}/messages`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ text: slow }),
    });
    expect(sent.status).toBe(202);
    await until('a text.delta', () => (text.includes('event: text.delta') ? true : undefined), 120_000);

    // The runner for this session, and every process group the host has seen below it (the CLI's too).
    const runner = await until(
      'the runner and its CLI group',
      async () =>
        (await s.runners()).find(
          (t) => t.sessionId === session.id && t.lastStatus === 'RUNNING' && t.groups.length >= 2,
        ),
      30_000,
    );
    const groups = runner.groups;
    expect(liveInGroups(groups).length).toBeGreaterThanOrEqual(2);

    const ecs = new ECSClient({
      region: 'us-east-1',
      endpoint: s.hostUrl,
      credentials: s.hostCredentials,
      maxAttempts: 1,
    });
    await ecs.send(
      new StopTaskCommand({ cluster: 'switchyard-local', task: runner.taskArn, reason: 'test: stop mid-turn' }),
    );
    const stopped = await until(
      'STOPPED',
      async () => {
        const t = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [runner.taskArn] })))
          .tasks?.[0];
        return t?.lastStatus === 'STOPPED' ? t : undefined;
      },
      60_000,
    );
    expect(stopped.stopCode).toBe('UserInitiated');
    expect(typeof stopped.containers?.[0]?.exitCode).toBe('number');
    // STOPPED means nothing of the task is left: no runner, no CLI, no tool process.
    expect(liveInGroups(groups)).toEqual([]);
    sse.abort();
    await reader;
  } catch (err) {
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\n--- stack output (tail):\n${lines.slice(-60).join('\n')}`,
    );
  } finally {
    sse.abort();
    await stack?.stop();
  }
}, 300_000);
