import { EcsLaunchSettingsShape, launchSettingsOf, type EcsLaunchSettings } from '@switchyard/protocol';
import { z } from 'zod';
import type { TaskIdentityConfig } from './task-identity.ts';

// The ECS launcher's configuration: wrangler `[vars]` plus secrets (`wrangler secret put`).
// Validated when a launcher is built; an error names the variables, never their values.

const optionalText = z
  .string()
  .optional()
  .transform((s) => (s === undefined || s.trim() === '' ? undefined : s.trim()));

const EcsLauncherEnvSchema = z
  .object({
    ...EcsLaunchSettingsShape,
    /**
     * Secret. What the launcher signs its ECS requests with: in production the launch broker's key
     * (docs/DESIGN.md "A leaked edge key running its own command"), which only the broker at
     * ECS_ENDPOINT accepts.
     */
    AWS_ACCESS_KEY_ID: z.string().trim().min(1, 'required (a secret: wrangler secret put AWS_ACCESS_KEY_ID)'),
    AWS_SECRET_ACCESS_KEY: z.string().min(1, 'required (a secret: wrangler secret put AWS_SECRET_ACCESS_KEY)'),
    AWS_SESSION_TOKEN: optionalText,
    /**
     * Where the ECS requests go: the launch broker's function URL in production, the local runner
     * host's broker in dev; unset, ECS itself (then the key must be an IAM key allowed RunTask, which
     * can also override a task's command: not how infra/ deploys).
     */
    ECS_ENDPOINT: optionalText.pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional()),
    /**
     * How the backend switch probes a backend: `task` runs the runner image's `probe` as a one-off
     * task and reads its exit code; `host` asks the local runner host for the full report
     * (`ECS_ENDPOINT` + `/switchyard/probe`); `off` reports every backend unverifiable.
     */
    RUNNER_PROBE: z.enum(['task', 'host', 'off']).default('task'),
    /**
     * `sts`: a runner must prove which task it is before its launch's bootstrap token is taken
     * (docs/DESIGN.md "Runner identity"); `off` trusts the token alone, for launchers whose launch
     * requests nobody else can read.
     */
    RUNNER_IDENTITY: z.enum(['sts', 'off']).default('sts'),
    /** The runner task definition's task role (the stack output `RunnerTaskRoleArn`). */
    RUNNER_TASK_ROLE_ARN: optionalText.pipe(
      z
        .string()
        .regex(/^arn:[a-z-]+:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'must be an IAM role ARN')
        .optional(),
    ),
    /** Endpoint override for STS: the local runner host's stand-in in dev and tests; unset in production. */
    STS_ENDPOINT: optionalText.pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional()),
  })
  .superRefine((e, ctx) => {
    if (e.RUNNER_IDENTITY === 'sts' && e.RUNNER_TASK_ROLE_ARN === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['RUNNER_TASK_ROLE_ARN'],
        message: 'required while RUNNER_IDENTITY=sts (the default): the role runners prove they hold',
      });
    }
  });

export interface EcsLauncherConfig extends EcsLaunchSettings {
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  endpoint: string | undefined;
  probeMode: 'task' | 'host' | 'off';
  /** Null: runners are not asked to prove their task identity (RUNNER_IDENTITY=off). */
  identity: TaskIdentityConfig | null;
}

type ConfigResult = { ok: true; config: EcsLauncherConfig } | { ok: false; error: string };

/** Reads the launcher's variables from the Worker env (unknown keys ignored; empty strings count as unset). */
export function loadEcsLauncherConfig(env: object): ConfigResult {
  const source: Record<string, unknown> = {};
  for (const key of Object.keys(EcsLauncherEnvSchema.shape)) {
    const v = (env as Record<string, unknown>)[key];
    if (typeof v === 'string' && v !== '') source[key] = v;
  }
  const parsed = EcsLauncherEnvSchema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'env'}: ${i.message}`);
    return { ok: false, error: `the ECS launcher is not configured: ${problems.join('; ')}` };
  }
  const e = parsed.data;
  return {
    ok: true,
    config: {
      ...launchSettingsOf(e),
      region: e.AWS_REGION,
      credentials: {
        accessKeyId: e.AWS_ACCESS_KEY_ID,
        secretAccessKey: e.AWS_SECRET_ACCESS_KEY,
        ...(e.AWS_SESSION_TOKEN !== undefined && { sessionToken: e.AWS_SESSION_TOKEN }),
      },
      endpoint: e.ECS_ENDPOINT,
      probeMode: e.RUNNER_PROBE,
      identity:
        e.RUNNER_IDENTITY === 'off' || e.RUNNER_TASK_ROLE_ARN === undefined
          ? null
          : {
              sts: { url: e.STS_ENDPOINT ?? `https://sts.${e.AWS_REGION}.amazonaws.com/`, region: e.AWS_REGION },
              taskRoleArn: e.RUNNER_TASK_ROLE_ARN,
            },
    },
  };
}
