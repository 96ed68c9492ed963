// The attack on a launch's bootstrap token, performed on the local stack (docs/DESIGN.md "Runner
// identity"): someone who can read ECS DescribeTasks reads a new launch's overrides while its task
// is still provisioning, dials the hub with the token and says hello first, without a proof and
// then with a valid proof of another task (another session's runner, whose task credentials it
// took from that process). Both are refused before the token binds; the real runner, once
// provisioned, proves itself and answers the message. The runner host stands in for ECS, the
// container credentials endpoint and STS.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { DescribeTasksCommand, ECSClient } from '@aws-sdk/client-ecs';
import { signRunnerIdentity, WIRE_PROTOCOL_VERSION, type RunnerIdentityProof } from '@switchyard/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Stack } from '../../scripts/start.ts';
import { E2eHarness, liveTask, offline, sendMessage, turnSaved } from '../helpers/e2e-harness.ts';
import { until } from '../helpers/poll.ts';
import type { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;
/** Every task provisions this long first: the window in which only the overrides exist. */
const PROVISION_MS = 10_000;

const h = new E2eHarness();
const { dumpOnFail } = h;
let stack: Stack;
let admin: Api;

beforeAll(async () => {
  ({ stack, admin } = await h.start('runner-identity', { provisionDelayMs: PROVISION_MS }));
}, STACK_READY_MS);

afterAll(() => h.stop(), 120_000);

/** Dials the hub as `runnerId` with `token`, says hello: how the link ended, or the first frame it got. */
async function helloAs(sessionId: string, token: string, runnerId: string, identity?: RunnerIdentityProof) {
  const ws = new WebSocket(`${stack.hubUrl}?session=${sessionId}`, { headers: { authorization: `Bearer ${token}` } });
  await once(ws, 'open');
  ws.send(
    JSON.stringify({
      type: 'hello',
      protocol: WIRE_PROTOCOL_VERSION,
      runnerId,
      sessionId,
      backend: 'claude',
      cliVersion: 'attacker',
      capabilities: { guard: 'loaded', sandbox: 'none' },
      lastSeq: 0,
      ...(identity !== undefined && { identity }),
    }),
  );
  const ended = await Promise.race([
    once(ws, 'close').then(([code, reason]) => ({ code: code as number, reason: String(reason) })),
    once(ws, 'message').then(([data]) => ({ code: 0, reason: `the hub answered ${String(data).slice(0, 100)}` })),
  ]);
  ws.terminate();
  return ended;
}

/** The environment of a live process, as anyone who can read its /proc entry sees it. */
function processEnv(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

describe('runner identity on the local stack', () => {
  it(
    'a reader of the launch request who says hello first is refused, with no proof and with another task’s; the real runner answers',
    dumpOnFail(async () => {
      // Another session whose runner is up: its task credentials are the attacker's "other task".
      const other = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
      h.sessions.push(other);
      const otherSse = await h.track(admin.events(other));
      const first = await sendMessage(admin, other, offline({ text: 'other session' }, 'hi'));
      expect((await turnSaved(otherSse, first, TURN_MS)).done.data.stopReason).toBe('end_turn');
      const otherTask = await liveTask(stack, other);
      const otherEnv = processEnv(otherTask.pid as number);

      const target = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
      h.sessions.push(target);
      const sse = await h.track(admin.events(target));
      const messageId = await sendMessage(admin, target, offline({ text: 'for the real runner only' }, 'secret'));

      // The attacker's read: DescribeTasks through the real SDK, while the task still provisions.
      const ecs = new ECSClient({ region: 'us-east-1', endpoint: stack.hostUrl, credentials: stack.hostCredentials });
      const arn = await until(
        'the launch’s task',
        async () => (await stack.runners()).find((t) => t.sessionId === target)?.taskArn,
      );
      const described = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] })))
        .tasks?.[0];
      expect(described?.lastStatus).toBe('PROVISIONING');
      const launchEnv = Object.fromEntries(
        (described?.overrides?.containerOverrides?.[0]?.environment ?? []).map((e) => [e.name, e.value]),
      );
      const token = launchEnv.SWITCHYARD_RUNNER_TOKEN as string;
      expect(token).toMatch(/^syr1\./);

      // 1. The token alone.
      expect(await helloAs(target, token, 'attacker')).toEqual({
        code: 4401,
        reason: 'this launch needs a proof of the runner’s task identity',
      });
      // 2. A proof STS accepts, of another task: signed with that task's role credentials.
      const credentials = (await (
        await fetch(otherEnv.AWS_CONTAINER_CREDENTIALS_FULL_URI as string, {
          headers: { authorization: otherEnv.AWS_CONTAINER_AUTHORIZATION_TOKEN as string },
        })
      ).json()) as { AccessKeyId: string; SecretAccessKey: string; Token: string };
      const proof = await signRunnerIdentity(
        { url: launchEnv.SWITCHYARD_IDENTITY_URL as string, region: launchEnv.SWITCHYARD_IDENTITY_REGION as string },
        'attacker-2',
        {
          accessKeyId: credentials.AccessKeyId,
          secretAccessKey: credentials.SecretAccessKey,
          sessionToken: credentials.Token,
        },
      );
      expect(await helloAs(target, token, 'attacker-2', proof)).toEqual({
        code: 4401,
        reason: 'the identity proof is not of the task this launch started',
      });

      // Nothing was bound: the real runner, provisioned now, proves itself and answers.
      const done = await turnSaved(sse, messageId, TURN_MS);
      expect(done.done.data.stopReason).toBe('end_turn');
      const task = await liveTask(stack, target);
      expect(task.taskArn).toBe(arn);
    }),
    TURN_MS * 2,
  );
});
