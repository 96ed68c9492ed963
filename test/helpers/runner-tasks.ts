import type { Stack } from '../../scripts/start.ts';
import type { Api } from './sse-client.ts';
import { until } from './poll.ts';

/**
 * Stops the session's runner as ECS stops a task (SIGTERM to the local host's process) and waits
 * until the session is at rest; returns the stopped task (its log stays readable). Used by the
 * end-to-end tests and bench/pool, so no vitest import here.
 */
export async function stopSessionRunner(stack: Pick<Stack, 'runners'>, api: Api, sessionId: string, timeoutMs: number) {
  const detail = await api.call<{ runner: { ref: string | null } | null }>('GET', `/api/sessions/${sessionId}`);
  const ref = detail.body.runner?.ref;
  const task = (await stack.runners()).find((t) => t.taskArn === ref);
  if (task?.pid == null) throw new Error(`no live runner task for session ${sessionId}`);
  process.kill(task.pid, 'SIGTERM');
  await until(
    'the session at rest',
    async () => (await api.call<{ state: string }>('GET', `/api/sessions/${sessionId}`)).body.state === 'stopped',
    timeoutMs,
  );
  return task;
}
