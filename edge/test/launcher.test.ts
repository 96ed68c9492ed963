// The production ECS launcher, run inside workerd (this pool), against the local runner host
// started in Node by launcher.global-setup.ts. Proves `@aws-sdk/client-ecs` works in workerd
// (DESIGN.md "Launchers": a future SDK release that breaks it fails here) and pins exactly what
// it sends: the JSON 1.1 target, the SigV4 scope, every body field.
import { describe, expect, inject, it } from 'vitest';
import { EcsLauncher, ecsLauncherFromEnv } from '../src/launchers/ecs-launcher.ts';
import type { LaunchRequest, Launcher, RunnerDescription } from '../src/launchers/launcher.ts';
import { until } from '../../test/helpers/poll.ts';

const { url: HOST_URL, recorderUrl, stsUrl: STS_URL } = inject('launcherHost');

interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  target?: string;
  status?: number;
}

const requests = async (): Promise<Recorded[]> => (await fetch(recorderUrl)).json();
const clearRequests = async () => void (await fetch(recorderUrl, { method: 'DELETE' })).body?.cancel();

const VARS = {
  ECS_CLUSTER: 'switchyard-local',
  ECS_TASK_DEFINITION: 'switchyard-runner',
  ECS_CONTAINER_NAME: 'runner',
  ECS_SUBNETS: 'subnet-0a1b, subnet-2c3d',
  ECS_SECURITY_GROUPS: 'sg-0e4f',
  AWS_REGION: 'eu-central-1',
  AWS_ACCESS_KEY_ID: 'AKIDWORKERDTEST',
  AWS_SECRET_ACCESS_KEY: 'workerd-secret-key',
  ECS_ENDPOINT: HOST_URL,
  RUNNER_PROBE: 'host',
  RUNNER_TASK_ROLE_ARN: 'arn:aws:iam::000000000000:role/switchyard-local-runner',
  STS_ENDPOINT: STS_URL,
};

const TOKEN = 'rt.v1.secret-runner-token-for-test';
const request = (over: Partial<LaunchRequest> = {}): LaunchRequest => ({
  sessionId: 'ses_01JF6Q0000000000000000TEST',
  backend: 'pi',
  // Nothing listens there: a real `serve` keeps retrying, i.e. stays running.
  hubUrl: 'ws://127.0.0.1:9/internal/runner/connect',
  runnerToken: TOKEN,
  launchId: '01JF6Q00000000000000LAUNCH',
  model: 'claude-test-model',
  limits: { idleMs: 900_000, maxLifetimeMs: 28_800_000 },
  ...over,
});

/** Polls describe() until `done`; a timeout names the last description. */
async function describedAs(
  launcher: Launcher,
  ref: string,
  done: (d: RunnerDescription) => boolean,
): Promise<RunnerDescription> {
  let last: RunnerDescription | undefined;
  const probe = async () => {
    last = await launcher.describe(ref);
    return done(last) && last;
  };
  return until('the task description to match', probe, 40_000).catch((err: Error) => {
    throw new Error(`${err.message}; last description ${JSON.stringify(last)}`);
  });
}

const SIGV4 =
  /^AWS4-HMAC-SHA256 Credential=AKIDWORKERDTEST\/\d{8}\/eu-central-1\/ecs\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$/;

describe('EcsLauncher in workerd against the local runner host', () => {
  it('start sends exactly one signed RunTask: Fargate, awsvpc, the container override env with the token', async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv(VARS);
    const ref = await launcher.start(request());
    expect(ref).toMatch(/^arn:aws:ecs:eu-central-1:000000000000:task\/switchyard-local\/[0-9a-f]{32}$/);

    const [run, ...rest] = await requests();
    expect(rest).toEqual([]);
    expect(run?.method).toBe('POST');
    expect(run?.path).toBe('/');
    expect(run?.headers['x-amz-target']).toBe('AmazonEC2ContainerServiceV20141113.RunTask');
    expect(run?.headers['content-type']).toBe('application/x-amz-json-1.1');
    const signed = SIGV4.exec(run?.headers.authorization ?? '');
    expect(signed, run?.headers.authorization).not.toBeNull();
    expect(signed?.[1]?.split(';')).toEqual(
      expect.arrayContaining(['host', 'x-amz-date', 'x-amz-target', 'content-type']),
    );
    expect(run?.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(run?.body).toEqual({
      cluster: 'switchyard-local',
      taskDefinition: 'switchyard-runner',
      launchType: 'FARGATE',
      count: 1,
      startedBy: 'switchyard',
      clientToken: '01JF6Q00000000000000LAUNCH',
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: ['subnet-0a1b', 'subnet-2c3d'],
          securityGroups: ['sg-0e4f'],
          assignPublicIp: 'DISABLED',
        },
      },
      overrides: {
        containerOverrides: [
          {
            name: 'runner',
            environment: [
              { name: 'SWITCHYARD_HUB_URL', value: 'ws://127.0.0.1:9/internal/runner/connect' },
              { name: 'SWITCHYARD_SESSION_ID', value: 'ses_01JF6Q0000000000000000TEST' },
              { name: 'SWITCHYARD_BACKEND', value: 'pi' },
              { name: 'SWITCHYARD_RUNNER_ID', value: '01JF6Q00000000000000LAUNCH' },
              { name: 'SWITCHYARD_IDLE_TIMEOUT', value: '900000ms' },
              { name: 'SWITCHYARD_MAX_LIFETIME', value: '28800000ms' },
              { name: 'SWITCHYARD_RUNNER_TOKEN', value: TOKEN },
              { name: 'SWITCHYARD_MODEL', value: 'claude-test-model' },
              // Where the runner proves its task identity: the endpoint the edge will call.
              { name: 'SWITCHYARD_IDENTITY_URL', value: STS_URL },
              { name: 'SWITCHYARD_IDENTITY_REGION', value: 'eu-central-1' },
            ],
          },
        ],
      },
      tags: [
        { key: 'switchyard:session', value: 'ses_01JF6Q0000000000000000TEST' },
        { key: 'switchyard:launch', value: '01JF6Q00000000000000LAUNCH' },
        { key: 'switchyard:backend', value: 'pi' },
      ],
      enableExecuteCommand: false,
    });

    // A real runner process: pending → running, then StopTask ends it.
    await describedAs(launcher, ref, (d) => d.state === 'running');
    await clearRequests();
    await launcher.stop(ref, 'idle for 15 minutes');
    const [stop] = await requests();
    expect(stop?.headers['x-amz-target']).toBe('AmazonEC2ContainerServiceV20141113.StopTask');
    expect(stop?.headers.authorization).toMatch(SIGV4);
    expect(stop?.body).toEqual({ cluster: 'switchyard-local', task: ref, reason: 'idle for 15 minutes' });
    const stopped = await describedAs(launcher, ref, (d) => d.state === 'stopped');
    expect(typeof stopped.exitCode).toBe('number');
    // The reason ECS gives, then the container's (`killed by SIGTERM` when the runner had not
    // installed its handlers yet; nothing when it shut down cleanly).
    expect(stopped.reason).toMatch(/^UserInitiated: idle for 15 minutes(: killed by SIGTERM)?$/);
    const describes = (await requests()).filter((r) => r.target === 'AmazonEC2ContainerServiceV20141113.DescribeTasks');
    expect(describes[0]?.body).toEqual({ cluster: 'switchyard-local', tasks: [ref] });
    expect(describes[0]?.headers.authorization).toMatch(SIGV4);
  });

  it('describe reports the exit code of a runner that exited on its own', async () => {
    const launcher = ecsLauncherFromEnv(VARS);
    // `serve` refuses a hub URL that is not ws(s): configuration error, exit 2.
    const ref = await launcher.start(request({ hubUrl: 'http://127.0.0.1:9/not-a-websocket' }));
    const d = await describedAs(launcher, ref, (x) => x.state === 'stopped');
    expect(d).toEqual({
      state: 'stopped',
      exitCode: 2,
      reason: 'EssentialContainerExited: Essential container in task exited',
    });
  });

  it('stop is idempotent; an unknown task is `unknown`', async () => {
    const launcher = ecsLauncherFromEnv(VARS);
    const ghost = `arn:aws:ecs:eu-central-1:000000000000:task/switchyard-local/${'f'.repeat(32)}`;
    await expect(launcher.stop(ghost, 'cleanup')).resolves.toBeUndefined();
    expect(await launcher.describe(ghost)).toEqual({ state: 'unknown', reason: 'ECS has no record of this task' });
  });

  it('probe (host mode): signed like the ECS calls; the runner image reports pi usable, with its version', async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv(VARS);
    expect(await launcher.probe?.('pi')).toEqual({ available: true, version: '0.73.1' });
    const probe = (await requests()).find((r) => r.path === '/switchyard/probe');
    expect(probe?.headers.authorization).toMatch(SIGV4);
    // The host starts a process per probe: a launcher without the host's secret is refused.
    await expect(ecsLauncherFromEnv({ ...VARS, AWS_SECRET_ACCESS_KEY: 'guessed' }).probe?.('pi')).rejects.toThrow(
      'the runner host answered 403 to the probe',
    );
  });

  it('probe (task mode, as in production): a one-off RunTask of `probe --backend pi`, answered by its exit code', async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv({ ...VARS, RUNNER_PROBE: 'task' }, { probePollMs: 100 });
    expect(launcher).toBeInstanceOf(EcsLauncher);
    expect(await launcher.probe?.('pi')).toEqual({ available: true });
    const run = (await requests()).find((r) => r.target === 'AmazonEC2ContainerServiceV20141113.RunTask');
    expect(run?.body.overrides).toEqual({
      containerOverrides: [{ name: 'runner', command: ['probe', '--backend', 'pi'] }],
    });
    expect(run?.body.startedBy).toBe('switchyard-probe');
  });

  it('misconfiguration fails every call naming the variables, never echoing a secret', async () => {
    const launcher = ecsLauncherFromEnv({
      ...VARS,
      ECS_SUBNETS: ' , ',
      // Left empty, the task would land in the VPC's default security group.
      ECS_SECURITY_GROUPS: '',
      AWS_REGION: 'mars',
      AWS_SECRET_ACCESS_KEY: '',
    });
    const err = await launcher.start(request()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain('ECS_SUBNETS');
    expect(err?.message).toContain('ECS_SECURITY_GROUPS: at least one security group id is required');
    expect(err?.message).toContain('AWS_REGION');
    expect(err?.message).toContain('AWS_SECRET_ACCESS_KEY');
    expect(err?.message).not.toContain('AKIDWORKERDTEST');
    expect((await launcher.probe?.('pi'))?.available).toBe(false);
  });

  it('runner identity is on unless turned off: without the task role ARN nothing starts and no runner is accepted', async () => {
    const missing = ecsLauncherFromEnv({ ...VARS, RUNNER_TASK_ROLE_ARN: '' });
    const err = await missing.start(request()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain('RUNNER_TASK_ROLE_ARN: required while RUNNER_IDENTITY=sts');
    expect(await missing.verifyRunner('arn:aws:ecs:eu-central-1:000000000000:task/c/abc', 'r', undefined)).toEqual({
      ok: false,
      error: { code: 'config_invalid', message: expect.stringContaining('RUNNER_TASK_ROLE_ARN'), retryable: false },
    });
    const off = ecsLauncherFromEnv({ ...VARS, RUNNER_TASK_ROLE_ARN: '', RUNNER_IDENTITY: 'off' });
    expect(await off.verifyRunner('arn:aws:ecs:eu-central-1:000000000000:task/c/abc', 'r', undefined)).toEqual({
      ok: true,
    });
    expect(EcsLauncher.containerEnvironment(request(), null).map((e) => e.name)).not.toContain(
      'SWITCHYARD_IDENTITY_URL',
    );
  });

  it('an ECS error becomes a launch error without the request (which holds the token)', async () => {
    const launcher = ecsLauncherFromEnv({ ...VARS, ECS_CLUSTER: 'production' });
    const err = await launcher.start(request()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe('ECS RunTask failed: ClusterNotFoundException: Cluster not found.');
    expect(err?.message).not.toContain(TOKEN);
  });
});
