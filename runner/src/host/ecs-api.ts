// The subset of the Amazon ECS API that the edge's launcher calls, in its wire format:
// AWS JSON 1.1 (`POST /`, `Content-Type: application/x-amz-json-1.1`,
// `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Operation>`), errors as
// `{"__type": "...", "message": "..."}` with a 4xx status. Only the fields the
// launcher sends are modelled; unknown fields are accepted and ignored, as ECS
// ignores nothing but the SDK never sends what it does not know.
import { LAUNCH_ENV_NAMES } from '@switchyard/protocol';
import { POOL_ONLY_ENV_NAMES } from '@switchyard/protocol/pool';
import { z } from 'zod';

export const TARGET_PREFIX = 'AmazonEC2ContainerServiceV20141113.';
export const JSON_11 = 'application/x-amz-json-1.1';
/** The account id in the ARNs the local host makes up. */
export const LOCAL_ACCOUNT = '000000000000';

export class EcsError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export const invalidParameter = (message: string) => new EcsError(400, 'InvalidParameterException', message);

const KeyValue = z.object({ name: z.string().min(1), value: z.string() });

export const RunTaskInput = z.object({
  cluster: z.string().min(1).optional(),
  taskDefinition: z.string().min(1),
  count: z.number().int().min(1).max(10).optional(),
  launchType: z.enum(['FARGATE', 'EC2', 'EXTERNAL', 'MANAGED_INSTANCES']).optional(),
  startedBy: z.string().max(128).optional(),
  group: z.string().max(255).optional(),
  clientToken: z.string().max(64).optional(),
  networkConfiguration: z
    .object({
      awsvpcConfiguration: z.object({
        subnets: z.array(z.string()),
        securityGroups: z.array(z.string()).optional(),
        assignPublicIp: z.enum(['ENABLED', 'DISABLED']).optional(),
      }),
    })
    .optional(),
  overrides: z
    .object({
      containerOverrides: z
        .array(
          z.object({
            name: z.string().min(1).optional(),
            command: z.array(z.string()).optional(),
            environment: z.array(KeyValue).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
  tags: z
    .array(z.object({ key: z.string().min(1).max(128), value: z.string().max(256).optional() }))
    .max(50)
    .optional(),
  propagateTags: z.enum(['TASK_DEFINITION', 'SERVICE', 'NONE']).optional(),
  enableExecuteCommand: z.boolean().optional(),
});
export type RunTaskInput = z.infer<typeof RunTaskInput>;

export const StopTaskInput = z.object({
  cluster: z.string().min(1).optional(),
  task: z.string().min(1),
  reason: z.string().max(255).optional(),
});
export type StopTaskInput = z.infer<typeof StopTaskInput>;

export const DescribeTasksInput = z.object({
  cluster: z.string().min(1).optional(),
  tasks: z.array(z.string().min(1)).min(1).max(100),
  include: z.array(z.string()).optional(),
});
export type DescribeTasksInput = z.infer<typeof DescribeTasksInput>;

/** ListTasks as the launch broker asks it (running-cap.ts): the filters the host serves, no others. */
export const ListTasksInput = z.strictObject({
  cluster: z.string().min(1).optional(),
  desiredStatus: z.enum(['RUNNING', 'PENDING', 'STOPPED']).optional(),
  maxResults: z.number().int().min(1).max(100).optional(),
  nextToken: z.string().min(1).optional(),
});
export type ListTasksInput = z.infer<typeof ListTasksInput>;

export function parseInput<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw invalidParameter(`${issue?.path.join('.') || 'request'}: ${issue?.message ?? 'invalid'}`);
}

/** ECS task states (the subset a local process can be in). */
export type TaskStatus = 'PROVISIONING' | 'PENDING' | 'RUNNING' | 'STOPPING' | 'STOPPED';
export type StopCode = 'TaskFailedToStart' | 'EssentialContainerExited' | 'UserInitiated';

/** The Task shape DescribeTasks/RunTask/StopTask answer with (timestamps in epoch seconds, as JSON 1.1 encodes them). */
export interface EcsTask {
  taskArn: string;
  clusterArn: string;
  taskDefinitionArn: string;
  lastStatus: TaskStatus;
  desiredStatus: 'RUNNING' | 'STOPPED';
  launchType: string;
  createdAt: number;
  startedAt?: number;
  stoppingAt?: number;
  stoppedAt?: number;
  stopCode?: StopCode;
  stoppedReason?: string;
  startedBy?: string;
  group?: string;
  tags?: { key: string; value?: string }[];
  /** What RunTask was asked to override, as ECS shows it: the launch's token included. */
  overrides: {
    containerOverrides: { name: string; command?: string[]; environment: { name: string; value: string }[] }[];
  };
  containers: {
    containerArn: string;
    taskArn: string;
    name: string;
    lastStatus: TaskStatus;
    exitCode?: number;
    reason?: string;
    runtimeId?: string;
  }[];
}

/**
 * The container-override environment names the edge's launcher sets (protocol's LaunchEnvSchema):
 * per-session values only, and a pooled runner's pool URL and token (protocol's pool.ts).
 * Everything else a runner gets comes from the "task definition" (the
 * host's own allow-listed environment). The host runs tasks as the developer, so an override is
 * code execution or a redirect of the model key: NODE_OPTIONS, SWITCHYARD_SANDBOX,
 * SWITCHYARD_CLI_EXECUTABLE, SWITCHYARD_MODEL_URL and any name not listed here are refused.
 */
export const LAUNCHER_OVERRIDES: readonly string[] = [...LAUNCH_ENV_NAMES, ...POOL_ONLY_ENV_NAMES];

/** The commands a task may be started with: the image's default (`serve`) and the launcher's probe. */
function allowedCommand(command: string[]): boolean {
  if (command.length === 1 && command[0] === 'serve') return true;
  return (
    command.length === 3 &&
    command[0] === 'probe' &&
    command[1] === '--backend' &&
    (command[2] === 'claude' || command[2] === 'pi')
  );
}

type ContainerOverride = NonNullable<NonNullable<RunTaskInput['overrides']>['containerOverrides']>[number];

/** Checks RunTask's container overrides against what the launcher may set; the task's env and command. */
export function checkOverrides(
  overrides: ContainerOverride[],
  containerName: string,
  allowedNames: ReadonlySet<string>,
): { env: Record<string, string>; command: string[] | undefined } {
  const env: Record<string, string> = {};
  let command: string[] | undefined;
  for (const o of overrides) {
    if (o.name !== undefined && o.name !== containerName) {
      throw invalidParameter(`Override for container named ${o.name} is not a container in the TaskDefinition.`);
    }
    for (const kv of o.environment ?? []) {
      if (!allowedNames.has(kv.name)) {
        throw invalidParameter(
          `containerOverrides.environment: ${kv.name} may not be overridden on the local runner host; only the per-session names the launcher sets are accepted (${[...allowedNames].join(', ')})`,
        );
      }
      env[kv.name] = kv.value;
    }
    if (o.command !== undefined) {
      if (!allowedCommand(o.command))
        throw invalidParameter(
          'containerOverrides.command: the local runner host runs only `serve` and `probe --backend claude|pi`',
        );
      command = o.command;
    }
  }
  return { env, command };
}

export const arn = {
  cluster: (region: string, name: string) => `arn:aws:ecs:${region}:${LOCAL_ACCOUNT}:cluster/${name}`,
  task: (region: string, cluster: string, id: string) => `arn:aws:ecs:${region}:${LOCAL_ACCOUNT}:task/${cluster}/${id}`,
  container: (region: string, cluster: string, id: string, containerId: string) =>
    `arn:aws:ecs:${region}:${LOCAL_ACCOUNT}:container/${cluster}/${id}/${containerId}`,
  taskDefinition: (region: string, family: string) =>
    family.startsWith('arn:')
      ? family
      : `arn:aws:ecs:${region}:${LOCAL_ACCOUNT}:task-definition/${family.includes(':') ? family : `${family}:1`}`,
};

/** `name` or a cluster ARN → the name. */
export function clusterName(ref: string | undefined): string {
  if (ref === undefined) return 'default';
  const m = /^arn:aws[a-z-]*:ecs:[^:]*:[^:]*:cluster\/(.+)$/.exec(ref);
  return m?.[1] ?? ref;
}

/** A task ARN (or the bare id, which ECS also accepts) → the 32-hex id. */
export function taskId(ref: string): string | undefined {
  const m = /^(?:arn:aws[a-z-]*:ecs:[^:]*:[^:]*:task\/(?:[^/]+\/)?)?([0-9a-f]{32})$/.exec(ref);
  return m?.[1];
}
