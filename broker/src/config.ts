// The launch broker's configuration: its Lambda's environment (infra/src/runner-stack.ts sets
// it), or the local runner host's options. Validated once; an error names the variables, never
// their values.
import { commaList, EcsLaunchSettingsShape, launchSettingsOf, type IdentityEndpoint } from '@switchyard/protocol';
import { z } from 'zod';
import type { BrokerRules } from './rules.ts';
import { MAX_RUNNING_TASKS_RANGE, MAX_RUNNING_TASKS_RULE, maxRunningTasksProblem } from './running-cap.ts';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const BrokerEnvSchema = z.object({
  ...EcsLaunchSettingsShape,
  /** The edge's origins, comma-separated: every hub and pool URL a runner is given must be on one. */
  HUB_ORIGIN: commaList.pipe(
    z
      .array(
        httpUrl.refine(
          (u) => new URL(u).origin === u.replace(/\/$/, ''),
          'must be an origin as a browser writes it: scheme and lower-case host, no default port, no path',
        ),
      )
      .min(1, 'required'),
  ),
  /** `sts`: every launch names the region's STS as where its runner proves its task (the edge's default). */
  RUNNER_IDENTITY: z.enum(['sts', 'off']).default('sts'),
  /** The key id the edge signs with; its secret is the broker key. */
  BROKER_KEY_ID: z.string().trim().min(1, 'required'),
  /** Overrides for the local stack: the runner host's ECS API and STS stand-in. */
  ECS_ENDPOINT: httpUrl.optional(),
  STS_ENDPOINT: httpUrl.optional(),
  /**
   * The most runner tasks the cluster may have running or starting (running-cap.ts); a RunTask
   * past it is refused.
   */
  MAX_RUNNING_TASKS: z.coerce
    .number({ error: MAX_RUNNING_TASKS_RULE })
    .refine((v) => maxRunningTasksProblem(v) === null, MAX_RUNNING_TASKS_RULE)
    .default(MAX_RUNNING_TASKS_RANGE.default),
  /** `1` only in the local stack, whose tests clone repositories from loopback hosts. */
  ALLOW_LOOPBACK_REPOSITORIES: z.literal('1').optional(),
});

export interface BrokerConfig {
  rules: BrokerRules;
  region: string;
  /** Where checked requests go: ECS's regional endpoint. */
  ecsEndpoint: string;
  keyId: string;
  /** The cluster's ceiling on tasks desired RUNNING (running-cap.ts). */
  maxRunningTasks: number;
}

export type BrokerConfigResult = { ok: true; config: BrokerConfig } | { ok: false; error: string };

export function loadBrokerConfig(env: Record<string, string | undefined>): BrokerConfigResult {
  const source: Record<string, string> = {};
  for (const key of Object.keys(BrokerEnvSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') source[key] = v;
  }
  const parsed = BrokerEnvSchema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'env'}: ${i.message}`);
    return { ok: false, error: `the launch broker is not configured: ${problems.join('; ')}` };
  }
  const e = parsed.data;
  const identity: IdentityEndpoint | null =
    e.RUNNER_IDENTITY === 'off'
      ? null
      : { url: e.STS_ENDPOINT ?? `https://sts.${e.AWS_REGION}.amazonaws.com/`, region: e.AWS_REGION };
  return {
    ok: true,
    config: {
      rules: {
        ...launchSettingsOf(e),
        hubOrigins: e.HUB_ORIGIN.map((u) => new URL(u).origin),
        identity,
        allowLoopbackRepositories: e.ALLOW_LOOPBACK_REPOSITORIES === '1',
      },
      region: e.AWS_REGION,
      ecsEndpoint: e.ECS_ENDPOINT ?? `https://ecs.${e.AWS_REGION}.amazonaws.com/`,
      keyId: e.BROKER_KEY_ID,
      maxRunningTasks: e.MAX_RUNNING_TASKS,
    },
  };
}
