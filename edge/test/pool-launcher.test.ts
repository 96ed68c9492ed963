// The ECS launcher's pooled start (docs/DESIGN.md "Warm runner pool"), run inside workerd against
// the local runner host (launcher.global-setup.ts), pinning the exact RunTask the real SDK sends
// for a pooled runner: the pool's dial-in environment, no session and no runner token.
import { describe, expect, inject, it } from 'vitest';
import { ecsLauncherFromEnv } from '../src/launchers/ecs-launcher.ts';
import type { PoolLaunchRequest } from '../src/launchers/launcher.ts';

const { url: HOST_URL, recorderUrl, stsUrl: STS_URL } = inject('launcherHost');

const requests = async (): Promise<
  Array<{ target?: string; headers: Record<string, string>; body: Record<string, unknown> }>
> => (await fetch(recorderUrl)).json();
const clearRequests = async () => void (await fetch(recorderUrl, { method: 'DELETE' })).body?.cancel();

const VARS = {
  ECS_CLUSTER: 'switchyard-local',
  ECS_TASK_DEFINITION: 'switchyard-runner',
  ECS_CONTAINER_NAME: 'runner',
  ECS_SUBNETS: 'subnet-0a1b',
  ECS_SECURITY_GROUPS: 'sg-0e4f',
  AWS_REGION: 'eu-central-1',
  AWS_ACCESS_KEY_ID: 'AKIDWORKERDTEST',
  AWS_SECRET_ACCESS_KEY: 'workerd-secret-key',
  ECS_ENDPOINT: HOST_URL,
  RUNNER_PROBE: 'host',
  RUNNER_TASK_ROLE_ARN: 'arn:aws:iam::000000000000:role/switchyard-local-runner',
  STS_ENDPOINT: STS_URL,
};

/** One pooled launch as the coordinator asks for it. */
const POOLED: PoolLaunchRequest = {
  poolUrl: 'ws://127.0.0.1:9/internal/runner/pool',
  poolToken: 'syr1.pool-token-for-test.mac',
  backend: 'claude',
  runnerId: '01JF6Q000000000000000POOL1',
  model: null,
  limits: { idleMs: 900_000, maxLifetimeMs: 28_800_000 },
};

describe('EcsLauncher.startPooled', () => {
  it('sends one signed RunTask with the pool environment, tagged as pooled, idempotent on the runner id', async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv(VARS);
    const ref = await launcher.startPooled?.(POOLED);
    expect(ref).toMatch(/^arn:aws:ecs:eu-central-1:000000000000:task\/switchyard-local\/[0-9a-f]{32}$/);
    const [run, ...rest] = await requests();
    expect(rest).toEqual([]);
    expect(run?.headers['x-amz-target']).toBe('AmazonEC2ContainerServiceV20141113.RunTask');
    expect(run?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDWORKERDTEST\/\d{8}\/eu-central-1\/ecs\/aws4_request, /,
    );
    expect(run?.body).toEqual({
      cluster: 'switchyard-local',
      taskDefinition: 'switchyard-runner',
      launchType: 'FARGATE',
      count: 1,
      startedBy: 'switchyard-pool',
      clientToken: '01JF6Q000000000000000POOL1',
      networkConfiguration: {
        awsvpcConfiguration: { subnets: ['subnet-0a1b'], securityGroups: ['sg-0e4f'], assignPublicIp: 'DISABLED' },
      },
      overrides: {
        containerOverrides: [
          {
            name: 'runner',
            environment: [
              { name: 'SWITCHYARD_POOL_URL', value: 'ws://127.0.0.1:9/internal/runner/pool' },
              { name: 'SWITCHYARD_POOL_TOKEN', value: 'syr1.pool-token-for-test.mac' },
              { name: 'SWITCHYARD_BACKEND', value: 'claude' },
              { name: 'SWITCHYARD_RUNNER_ID', value: '01JF6Q000000000000000POOL1' },
              { name: 'SWITCHYARD_IDLE_TIMEOUT', value: '900000ms' },
              { name: 'SWITCHYARD_MAX_LIFETIME', value: '28800000ms' },
              { name: 'SWITCHYARD_IDENTITY_URL', value: STS_URL },
              { name: 'SWITCHYARD_IDENTITY_REGION', value: 'eu-central-1' },
            ],
          },
        ],
      },
      tags: [
        { key: 'switchyard:pool', value: '01JF6Q000000000000000POOL1' },
        { key: 'switchyard:backend', value: 'claude' },
      ],
      enableExecuteCommand: false,
    });
    await launcher.stop(ref as string, 'test over');
  });

  it("carries the local stack's loopback clone switch, which a claiming session's repository needs", async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv(VARS);
    const ref = await launcher.startPooled?.({
      ...POOLED,
      runnerId: '01JF6Q000000000000000POOL2',
      repositoryAllowLoopback: true,
    });
    const [run] = await requests();
    const body = run?.body as { overrides: { containerOverrides: Array<{ environment: unknown[] }> } };
    expect(body.overrides.containerOverrides[0]?.environment).toContainEqual({
      name: 'SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK',
      value: '1',
    });
    await launcher.stop(ref as string, 'test over');
  });
});
