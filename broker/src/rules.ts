// What the launch broker lets through to ECS (docs/DESIGN.md "A leaked edge key running its own
// command"): pure, no I/O. Each rule is a strict zod schema of the one request body the edge's ECS
// launcher sends (edge/src/launchers/ecs-launcher.ts), with every value the deployment fixes pinned
// to the broker's own configuration. A body that parses is re-serialized from what was parsed, so
// ECS sees exactly what was checked (no duplicate keys or fields a second parser might read).
import {
  BackendSchema,
  LaunchEnvSchema,
  RUNNER_CONNECT_PATH,
  type Backend,
  type EcsLaunchSettings,
  type IdentityEndpoint,
} from '@switchyard/protocol';
import { POOL_CONNECT_PATH, PoolLaunchEnvSchema } from '@switchyard/protocol/pool';
import { z } from 'zod';

export interface BrokerRules extends EcsLaunchSettings {
  /** The edge's origins (`https://…`, or `http://127.0.0.1:…` locally): the only ones a runner may dial. */
  hubOrigins: string[];
  /** Where runners prove their task identity; null: a launch may name none. */
  identity: IdentityEndpoint | null;
  /** Only the local stack lets runners clone from loopback hosts. */
  allowLoopbackRepositories: boolean;
}

export type Operation = 'RunTask' | 'StopTask' | 'DescribeTasks';
export const OPERATIONS: readonly Operation[] = ['RunTask', 'StopTask', 'DescribeTasks'];

export type RuleVerdict = { ok: true; body: unknown } | { ok: false; field: string; message: string };

const STARTED_BY = { session: 'switchyard', pool: 'switchyard-pool', probe: 'switchyard-probe' } as const;

const KeyValue = z.strictObject({ name: z.string(), value: z.string() });
const Tag = z.strictObject({ key: z.string(), value: z.string() });

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

/** `ws(s)://` URL → the `http(s)://` origin it belongs to, or null when it is not a plain ws(s) URL. */
function dialOrigin(url: string, path: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '' || u.pathname !== path) return null;
  if (u.protocol === 'wss:') return `https://${u.host}`;
  if (u.protocol === 'ws:') return `http://${u.host}`;
  return null;
}

function runTaskSchema(rules: BrokerRules) {
  return z.strictObject({
    cluster: z.literal(rules.cluster),
    taskDefinition: z.literal(rules.taskDefinition),
    launchType: z.literal('FARGATE'),
    count: z.literal(1),
    startedBy: z.enum([STARTED_BY.session, STARTED_BY.pool, STARTED_BY.probe]),
    clientToken: z.string().max(64).optional(),
    networkConfiguration: z.strictObject({
      awsvpcConfiguration: z.strictObject({
        subnets: z.array(z.string()).refine((s) => sameSet(s, rules.subnets), 'must be the configured subnets'),
        securityGroups: z
          .array(z.string())
          .refine((s) => sameSet(s, rules.securityGroups), 'must be the configured security groups'),
        assignPublicIp: z.literal(rules.assignPublicIp),
      }),
    }),
    overrides: z.strictObject({
      containerOverrides: z
        .array(
          z.strictObject({
            name: z.literal(rules.containerName),
            command: z.array(z.string()).optional(),
            environment: z.array(KeyValue).optional(),
          }),
        )
        .length(1),
    }),
    tags: z.array(Tag),
    enableExecuteCommand: z.literal(false),
  });
}

type RunTask = z.infer<ReturnType<typeof runTaskSchema>>;
type Refusal = { field: string; message: string };

const refuse = (field: string, message: string): Refusal => ({ field, message });
const ENV = 'overrides.containerOverrides.0.environment';

/** The environment as a record; a name given twice is refused (ECS would take one of them). */
function envRecord(list: { name: string; value: string }[] | undefined): [Record<string, string>, Refusal | null] {
  // No prototype: `__proto__` is then a name like any other, which the strict schema refuses (on a
  // plain object its assignment would be dropped, and the entry would pass unchecked).
  const out: Record<string, string> = Object.create(null);
  for (const [i, { name, value }] of (list ?? []).entries()) {
    if (Object.hasOwn(out, name)) return [out, refuse(`${ENV}.${i}.name`, `${name} is given twice`)];
    out[name] = value;
  }
  return [out, null];
}

function firstIssue(prefix: string, error: z.ZodError): Refusal {
  const issue = error.issues[0];
  // An unknown field is named itself, not the object that holds it.
  const unknown = issue?.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [];
  const path = [prefix, ...(issue?.path ?? []).map(String), ...unknown].filter((p) => p !== '').join('.');
  return refuse(path, issue?.message ?? 'invalid');
}

/** What a session launch, a pooled launch and a probe must carry beside the shared fields. */
function checkKind(task: RunTask, rules: BrokerRules): Refusal | null {
  const container = task.overrides.containerOverrides[0];
  if (task.startedBy === STARTED_BY.probe) {
    const backend = BackendSchema.safeParse(container?.command?.[2]);
    const command = container?.command ?? [];
    if (!backend.success || command.length !== 3 || command[0] !== 'probe' || command[1] !== '--backend')
      return refuse('overrides.containerOverrides.0.command', 'only `probe --backend <claude|pi>` may be run');
    if (container?.environment !== undefined) return refuse(ENV, 'a probe takes no environment');
    return sameTags(task.tags, [{ key: 'switchyard:probe', value: backend.data }]);
  }
  if (container?.command !== undefined)
    return refuse('overrides.containerOverrides.0.command', 'a runner runs the image’s own command');
  const [env, twice] = envRecord(container?.environment);
  if (twice !== null) return twice;
  const pooled = task.startedBy === STARTED_BY.pool;
  const parsed = (pooled ? PoolLaunchEnvSchema : LaunchEnvSchema).safeParse(env);
  if (!parsed.success) return firstIssue(ENV, parsed.error);
  const dialUrl = pooled ? env.SWITCHYARD_POOL_URL : env.SWITCHYARD_HUB_URL;
  const urlName = pooled ? 'SWITCHYARD_POOL_URL' : 'SWITCHYARD_HUB_URL';
  const origin = dialOrigin(dialUrl ?? '', pooled ? POOL_CONNECT_PATH : RUNNER_CONNECT_PATH);
  if (origin === null || !rules.hubOrigins.includes(origin))
    return refuse(`${ENV}.${urlName}`, `runners dial only ${rules.hubOrigins.join(' or ')}`);
  const identity = rules.identity;
  if (
    identity === null
      ? env.SWITCHYARD_IDENTITY_URL !== undefined
      : env.SWITCHYARD_IDENTITY_URL !== identity.url || env.SWITCHYARD_IDENTITY_REGION !== identity.region
  )
    return refuse(
      `${ENV}.SWITCHYARD_IDENTITY_URL`,
      identity === null ? 'runners prove no identity here' : `runners prove their identity at ${identity.url} only`,
    );
  if (env.SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK !== undefined && !rules.allowLoopbackRepositories)
    return refuse(`${ENV}.SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK`, 'not allowed in this deployment');
  const runnerId = env.SWITCHYARD_RUNNER_ID ?? '';
  const backend = env.SWITCHYARD_BACKEND as Backend;
  if (task.clientToken !== runnerId.slice(0, 64)) return refuse('clientToken', 'must be the runner id');
  const sessionId = env.SWITCHYARD_SESSION_ID ?? '';
  return sameTags(
    task.tags,
    pooled
      ? [
          { key: 'switchyard:pool', value: runnerId.slice(0, 256) },
          { key: 'switchyard:backend', value: backend },
        ]
      : [
          { key: 'switchyard:session', value: sessionId.slice(0, 256) },
          { key: 'switchyard:launch', value: runnerId.slice(0, 256) },
          { key: 'switchyard:backend', value: backend },
        ],
  );
}

function sameTags(given: { key: string; value: string }[], expected: { key: string; value: string }[]): Refusal | null {
  const text = (t: { key: string; value: string }[]) => t.map((x) => JSON.stringify([x.key, x.value]));
  return sameSet(text(given), text(expected)) ? null : refuse('tags', 'must be the launch’s own tags');
}

const ArnOrId = z.string().min(1).max(2048);

/** One ECS request body against the rules: the body to forward, or the first field refused. */
export function checkRequest(operation: Operation, body: unknown, rules: BrokerRules): RuleVerdict {
  switch (operation) {
    case 'RunTask': {
      const parsed = runTaskSchema(rules).safeParse(body);
      if (!parsed.success) return { ok: false, ...firstIssue('', parsed.error) };
      const refusal = checkKind(parsed.data, rules);
      return refusal === null ? { ok: true, body: parsed.data } : { ok: false, ...refusal };
    }
    case 'StopTask': {
      const parsed = z
        .strictObject({ cluster: z.literal(rules.cluster), task: ArnOrId, reason: z.string().max(255).optional() })
        .safeParse(body);
      return parsed.success ? { ok: true, body: parsed.data } : { ok: false, ...firstIssue('', parsed.error) };
    }
    case 'DescribeTasks': {
      const parsed = z
        .strictObject({ cluster: z.literal(rules.cluster), tasks: z.array(ArnOrId).min(1).max(100) })
        .safeParse(body);
      return parsed.success ? { ok: true, body: parsed.data } : { ok: false, ...firstIssue('', parsed.error) };
    }
  }
}
