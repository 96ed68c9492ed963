// The edge's ECS launcher through the launch broker (docs/DESIGN.md "A leaked edge key running its
// own command"), inside workerd, as production runs it: the launcher signs with the broker key
// only, and the local runner host's broker (launcher.global-setup.ts) checks each request and
// passes it on signed with the host's own key. Every kind of call the edge makes must pass; what a
// leaked edge key could try beyond them must not, and nothing of it may reach the ECS API.
import { ECSClient, RegisterTaskDefinitionCommand, RunTaskCommand } from '@aws-sdk/client-ecs';
import { describe, expect, inject, it } from 'vitest';
import { ecsLauncherFromEnv } from '../src/launchers/ecs-launcher.ts';
import type { LaunchRequest, Launcher, RunnerDescription } from '../src/launchers/launcher.ts';
import { until } from '../../test/helpers/poll.ts';
import { BROKER_ENV, BROKER_KEY } from './launch-broker-env.ts';

const { url: HOST_URL, brokerUrl: BROKER_URL, recorderUrl, stsUrl: STS_URL } = inject('launcherHost');

interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  target?: string;
}
const requests = async (): Promise<Recorded[]> => (await fetch(recorderUrl)).json();
const clearRequests = async () => void (await fetch(recorderUrl, { method: 'DELETE' })).body?.cancel();

const VARS = {
  ...BROKER_ENV,
  AWS_ACCESS_KEY_ID: BROKER_KEY.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BROKER_KEY.secretAccessKey,
  ECS_ENDPOINT: BROKER_URL,
  RUNNER_PROBE: 'host',
  RUNNER_TASK_ROLE_ARN: 'arn:aws:iam::000000000000:role/switchyard-local-runner',
  STS_ENDPOINT: STS_URL,
};
const HUB_URL = `${BROKER_ENV.HUB_ORIGIN.replace('http:', 'ws:')}/internal/runner/connect`;

const request = (over: Partial<LaunchRequest> = {}): LaunchRequest => ({
  sessionId: 'ses_01JF6Q0000000000000BROKER',
  backend: 'pi',
  hubUrl: HUB_URL,
  runnerToken: 'rt.v1.secret-runner-token-for-broker-test',
  launchId: '01JF6Q0000000000000BROKER1',
  model: null,
  limits: { idleMs: 900_000, maxLifetimeMs: 28_800_000 },
  fresh: true,
  warmUp: true,
  ...over,
});

async function describedAs(launcher: Launcher, ref: string, done: (d: RunnerDescription) => boolean) {
  return until('the task description to match', async () => done(await launcher.describe(ref)), 40_000);
}

/** The key id a request reached the host's ECS API signed with. */
const keyId = (r: Recorded) => /Credential=([^/]+)\//.exec(r.headers.authorization ?? '')?.[1];

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );

describe('the ECS launcher through the launch broker', () => {
  it('start, describe, stop and a pooled start pass, reaching ECS signed with the broker’s key', async () => {
    await clearRequests();
    const launcher = ecsLauncherFromEnv(VARS);
    const ref = await launcher.start(request());
    await describedAs(launcher, ref, (d) => d.state === 'running');
    await launcher.stop(ref, 'broker test done');
    await describedAs(launcher, ref, (d) => d.state === 'stopped');
    const pooled = await launcher.startPooled?.({
      poolUrl: `${BROKER_ENV.HUB_ORIGIN.replace('http:', 'ws:')}/internal/runner/pool`,
      poolToken: 'syr1.pool-token-for-broker-test.mac',
      backend: 'claude',
      runnerId: '01JF6Q000000000000BROKERP1',
      model: null,
      limits: { idleMs: 900_000, maxLifetimeMs: 28_800_000 },
    });
    expect(pooled).toMatch(/^arn:aws:ecs:eu-central-1:000000000000:task\/switchyard-local\//);
    await launcher.stop(pooled as string, 'broker test done');

    // The host serves the other launcher test files too, which may run meanwhile: this test's
    // requests are the ones about its tasks or its launch.
    const ours = [ref, pooled as string, request().sessionId, '01JF6Q000000000000BROKERP1'];
    const seen = (await requests()).filter((r) => ours.some((s) => JSON.stringify(r.body).includes(s)));
    const targets = new Set(seen.map((r) => r.target?.split('.').at(-1)));
    expect(targets).toEqual(new Set(['RunTask', 'DescribeTasks', 'StopTask']));
    // What the broker passed on is signed with the host's key alone: the edge's never reaches ECS.
    expect(new Set(seen.map(keyId))).toEqual(new Set(['AKIDWORKERDTEST']));
    const runs = seen.filter((r) => r.target?.endsWith('.RunTask'));
    expect(runs.map((r) => r.body.startedBy)).toEqual(['switchyard', 'switchyard-pool']);
  });

  it('probes pass too: a one-off probe task, and the local host’s own probe route', async () => {
    const task = ecsLauncherFromEnv({ ...VARS, RUNNER_PROBE: 'task' }, { probePollMs: 100 });
    expect(await task.probe?.('pi')).toEqual({ available: true });
    expect(await ecsLauncherFromEnv(VARS).probe?.('pi')).toEqual({ available: true, version: '0.73.1' });
  });

  it('a launch whose runner would dial another origin is refused, naming the variable', async () => {
    await clearRequests();
    const err = await errorOf(
      ecsLauncherFromEnv(VARS).start(request({ hubUrl: 'wss://elsewhere.example/internal/runner/connect' })),
    );
    expect(err?.message).toBe(
      'ECS RunTask failed: AccessDeniedException: the launch broker refused overrides.containerOverrides.0.environment.SWITCHYARD_HUB_URL: runners dial only http://127.0.0.1:9',
    );
    expect(await requests()).toEqual([]);
  });

  it('a leaked edge key runs no command, sets no variable, registers nothing, and opens nothing at ECS itself', async () => {
    await clearRequests();
    const ecs = new ECSClient({
      region: 'eu-central-1',
      endpoint: BROKER_URL,
      credentials: BROKER_KEY,
      maxAttempts: 1,
    });
    const run = (container: Record<string, unknown>) =>
      errorOf(
        ecs.send(
          new RunTaskCommand({
            cluster: 'switchyard-local',
            taskDefinition: 'switchyard-runner',
            launchType: 'FARGATE',
            count: 1,
            startedBy: 'switchyard',
            networkConfiguration: {
              awsvpcConfiguration: {
                subnets: ['subnet-0a1b', 'subnet-2c3d'],
                securityGroups: ['sg-0e4f'],
                assignPublicIp: 'DISABLED',
              },
            },
            overrides: { containerOverrides: [{ name: 'runner', ...container }] },
            tags: [],
            enableExecuteCommand: false,
          }),
        ),
      );
    const command = await run({ command: ['sh', '-c', 'printenv ANTHROPIC_API_KEY'] });
    expect(command?.name).toBe('AccessDeniedException');
    expect(command?.message).toContain('overrides.containerOverrides.0.command');
    // The credential proxy would send the model key wherever SWITCHYARD_MODEL_URL points.
    const modelUrl = await run({ environment: [{ name: 'SWITCHYARD_MODEL_URL', value: 'https://elsewhere.example' }] });
    expect(modelUrl?.name).toBe('AccessDeniedException');
    expect(modelUrl?.message).toContain('overrides.containerOverrides.0.environment');
    const register = await errorOf(
      ecs.send(
        new RegisterTaskDefinitionCommand({
          family: 'switchyard-runner',
          containerDefinitions: [{ name: 'runner', image: 'elsewhere', command: ['sh'] }],
        }),
      ),
    );
    expect(register?.name).toBe('AccessDeniedException');
    expect(await requests()).toEqual([]);
    // Straight to the ECS API, the edge's key is no key.
    const direct = new ECSClient({
      region: 'eu-central-1',
      endpoint: HOST_URL,
      credentials: BROKER_KEY,
      maxAttempts: 1,
    });
    const refused = await errorOf(
      direct.send(new RunTaskCommand({ cluster: 'switchyard-local', taskDefinition: 'x' })),
    );
    expect(refused?.name).toBe('UnrecognizedClientException');
  });
});
