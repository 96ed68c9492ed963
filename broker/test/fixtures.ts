// The request bodies the edge's ECS launcher sends, built the way it builds them: the protocol's
// own environment helpers, in the shape of EcsLauncher.runTaskInput
// (edge/src/launchers/ecs-launcher.ts). Copied, not imported: the broker must not depend on the
// edge, and a change to what the edge sends should have to be made here too, on purpose.
import { ECSServiceException } from '@aws-sdk/client-ecs';
import { launchEnvironment, RUNNER_CONNECT_PATH, type Backend } from '@switchyard/protocol';
import { POOL_CONNECT_PATH, poolLaunchEnvironment } from '@switchyard/protocol/pool';
import type { BrokerRules } from '../src/rules.ts';

export interface KeyValue {
  name: string;
  value: string;
}
export interface Tag {
  key: string;
  value: string;
}
export interface ContainerOverride {
  name: string;
  command?: string[];
  environment?: KeyValue[];
}
export interface RunTaskBody {
  cluster: string;
  taskDefinition: string;
  launchType: 'FARGATE';
  count: number;
  startedBy: string;
  clientToken?: string;
  networkConfiguration: {
    awsvpcConfiguration: { subnets: string[]; securityGroups: string[]; assignPublicIp: 'ENABLED' | 'DISABLED' };
  };
  overrides: { containerOverrides: ContainerOverride[] };
  tags: Tag[];
  enableExecuteCommand: boolean;
}

export const REGION = 'eu-central-1';
export const STS_URL = `https://sts.${REGION}.amazonaws.com/`;
export const HUB_ORIGIN = 'https://edge.switchyard.example';

/** A production-like deployment: an https edge, runners proving their task at the region's STS. */
export const RULES: BrokerRules = {
  cluster: 'switchyard-prod',
  taskDefinition: 'arn:aws:ecs:eu-central-1:123456789012:task-definition/switchyard-runner:7',
  containerName: 'runner',
  subnets: ['subnet-0a1b', 'subnet-2c3d'],
  securityGroups: ['sg-0e4f'],
  assignPublicIp: 'DISABLED',
  hubOrigins: [HUB_ORIGIN],
  identity: { url: STS_URL, region: REGION },
  allowLoopbackRepositories: false,
};

export const RUNNER_TOKEN = 'rt.v1.secret-runner-token-for-broker-test';
export const POOL_TOKEN = 'syr1.secret-pool-token-for-broker-test.mac';
export const SESSION_ID = 'ses_01JF6Q0000000000000000TEST';
export const LAUNCH_ID = '01JF6Q00000000000000LAUNCH';
export const POOL_RUNNER_ID = '01JF6Q000000000000000POOL1';

/** `https://x` → `wss://x` (and http → ws), as the edge derives its runner URLs from its origin. */
export const wsOrigin = (origin: string) => origin.replace(/^http/, 'ws');
const firstOrigin = (rules: BrokerRules) => rules.hubOrigins[0] ?? 'https://no-origin.invalid';

/** EcsLauncher.runTaskInput, field for field. */
function runTaskInput(
  rules: BrokerRules,
  command: string[] | undefined,
  environment: KeyValue[],
  startedBy: string,
  clientToken: string | undefined,
  tags: Tag[],
): RunTaskBody {
  return {
    cluster: rules.cluster,
    taskDefinition: rules.taskDefinition,
    launchType: 'FARGATE',
    count: 1,
    startedBy,
    ...(clientToken !== undefined && { clientToken }),
    networkConfiguration: {
      awsvpcConfiguration: {
        subnets: [...rules.subnets],
        securityGroups: [...rules.securityGroups],
        assignPublicIp: rules.assignPublicIp,
      },
    },
    overrides: {
      containerOverrides: [
        {
          name: rules.containerName,
          ...(command !== undefined && { command }),
          ...(environment.length > 0 && { environment }),
        },
      ],
    },
    tags,
    enableExecuteCommand: false,
  };
}

const pairs = (env: Record<string, string | undefined>): KeyValue[] =>
  Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }]));

export interface SessionLaunch {
  sessionId?: string;
  backend?: Backend;
  launchId?: string;
  model?: string | null;
  repositoryAllowLoopback?: boolean;
  fresh?: boolean;
  warmUp?: boolean;
}

/** EcsLauncher.start's RunTask. */
export function sessionRunTask(rules: BrokerRules = RULES, o: SessionLaunch = {}): RunTaskBody {
  const sessionId = o.sessionId ?? SESSION_ID;
  const launchId = o.launchId ?? LAUNCH_ID;
  const backend = o.backend ?? 'pi';
  const env = launchEnvironment({
    hubUrl: `${wsOrigin(firstOrigin(rules))}${RUNNER_CONNECT_PATH}`,
    sessionId,
    backend,
    runnerId: launchId,
    idleMs: 900_000,
    maxLifetimeMs: 28_800_000,
    runnerToken: RUNNER_TOKEN,
    model: o.model === undefined ? 'claude-test-model' : o.model,
    ...(o.repositoryAllowLoopback === true && { repositoryAllowLoopback: true }),
    ...(o.fresh === true && { fresh: true }),
    ...(o.warmUp === true && { warmUp: true }),
    ...(rules.identity !== null && { identity: rules.identity }),
  });
  return runTaskInput(rules, undefined, pairs(env), 'switchyard', launchId.slice(0, 64), [
    { key: 'switchyard:session', value: sessionId.slice(0, 256) },
    { key: 'switchyard:launch', value: launchId.slice(0, 256) },
    { key: 'switchyard:backend', value: backend },
  ]);
}

/** EcsLauncher.startPooled's RunTask. */
export function pooledRunTask(
  rules: BrokerRules = RULES,
  o: { backend?: Backend; repositoryAllowLoopback?: boolean } = {},
): RunTaskBody {
  const backend = o.backend ?? 'claude';
  const env = poolLaunchEnvironment({
    poolUrl: `${wsOrigin(firstOrigin(rules))}${POOL_CONNECT_PATH}`,
    poolToken: POOL_TOKEN,
    backend,
    runnerId: POOL_RUNNER_ID,
    idleMs: 900_000,
    maxLifetimeMs: 28_800_000,
    model: null,
    ...(o.repositoryAllowLoopback === true && { repositoryAllowLoopback: true }),
    ...(rules.identity !== null && { identity: rules.identity }),
  });
  return runTaskInput(rules, undefined, pairs(env), 'switchyard-pool', POOL_RUNNER_ID.slice(0, 64), [
    { key: 'switchyard:pool', value: POOL_RUNNER_ID.slice(0, 256) },
    { key: 'switchyard:backend', value: backend },
  ]);
}

/** EcsLauncher.probeViaTask's RunTask: `probe --backend B`, no environment, no client token. */
export function probeRunTask(rules: BrokerRules = RULES, backend: Backend = 'pi'): RunTaskBody {
  return runTaskInput(rules, ['probe', '--backend', backend], [], 'switchyard-probe', undefined, [
    { key: 'switchyard:probe', value: backend },
  ]);
}

export const taskArn = (rules: BrokerRules, id: string) =>
  `arn:aws:ecs:${REGION}:123456789012:task/${rules.cluster}/${id}`;

/** The one container override, replaced by what `f` makes of it. */
export function withContainer(body: RunTaskBody, f: (c: ContainerOverride) => object): unknown {
  const copy = structuredClone(body);
  const [first] = copy.overrides.containerOverrides;
  return { ...copy, overrides: { containerOverrides: [f(first ?? { name: '' })] } };
}

/** The container's environment, replaced by what `f` makes of it. */
export function withEnv(body: RunTaskBody, f: (env: KeyValue[]) => KeyValue[]): RunTaskBody {
  const copy = structuredClone(body);
  const c = copy.overrides.containerOverrides[0];
  if (c !== undefined) c.environment = f(c.environment ?? []);
  return copy;
}

/** One variable set to `value` (replaced where it is, appended otherwise); undefined removes it. */
export function setVar(env: KeyValue[], name: string, value: string | undefined): KeyValue[] {
  const rest = env.filter((kv) => kv.name !== name);
  if (value === undefined) return rest;
  const i = env.findIndex((kv) => kv.name === name);
  if (i === -1) return [...env, { name, value }];
  return env.map((kv) => (kv.name === name ? { name, value } : kv));
}

export const envValue = (body: RunTaskBody, name: string) =>
  body.overrides.containerOverrides[0]?.environment?.find((kv) => kv.name === name)?.value;

/** The error the SDK threw: its name, message and the HTTP status it read. */
export async function sdkError(
  p: Promise<unknown>,
): Promise<{ name: string; message: string; status: number | undefined }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ECSServiceException)
      return { name: err.name, message: err.message, status: err.$metadata.httpStatusCode };
    throw err;
  }
  throw new Error('expected the SDK call to fail');
}
