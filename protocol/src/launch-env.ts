import { z } from 'zod';
import { BackendSchema, type Backend } from './backend.ts';
import { AwsRegionSchema } from './ecs-launch-settings.ts';
import type { IdentityEndpoint } from './runner-identity.ts';

// The per-session environment a launcher gives a runner (ECS container overrides, or the local
// runner host's RunTask overrides). The edge builds it with launchEnvironment; the local host
// accepts exactly these names as overrides; the runner's `serve` config reads them with its own
// defaults and stricter rules (runner/src/config.ts).

/**
 * Where the runner proves which task it is (runner-identity.ts): the STS endpoint the edge will
 * send its proof to, and that endpoint's signing region. Both or neither; absent, the runner sends
 * no proof (a launcher whose launch requests nobody else can read).
 */
export const IdentityEnvShape = {
  SWITCHYARD_IDENTITY_URL: z.url({ protocol: /^https?$/ }).optional(),
  SWITCHYARD_IDENTITY_REGION: AwsRegionSchema.optional(),
};

/** The identity names for one endpoint (or none). */
export function identityEnv(identity: IdentityEndpoint | undefined) {
  return identity === undefined
    ? {}
    : { SWITCHYARD_IDENTITY_URL: identity.url, SWITCHYARD_IDENTITY_REGION: identity.region };
}

const millis = z.string().regex(/^\d+ms$/, 'must be a whole number of milliseconds, e.g. 900000ms');

export const LaunchEnvSchema = z.strictObject({
  /** The runner link URL (`ws(s)://<edge>` + RUNNER_CONNECT_PATH). */
  SWITCHYARD_HUB_URL: z.string().min(1),
  SWITCHYARD_SESSION_ID: z.string().min(1),
  SWITCHYARD_BACKEND: BackendSchema,
  SWITCHYARD_RUNNER_ID: z.string().min(1),
  SWITCHYARD_IDLE_TIMEOUT: millis,
  SWITCHYARD_MAX_LIFETIME: millis,
  /** The one per-session secret: short-lived and scoped to this session and launch. */
  SWITCHYARD_RUNNER_TOKEN: z.string().min(1),
  /** Absent: the CLI's own default model. */
  SWITCHYARD_MODEL: z.string().optional(),
  /**
   * `1`: a repository may be cloned from a loopback host. Only the local stack's edge sets it (its
   * `REPOSITORY_ALLOW_LOOPBACK`), so tests can serve a repository; never in production.
   */
  SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK: z.literal('1').optional(),
  /**
   * `1`: when the hub launched this runner the session had nothing to restore (no transcript, no
   * file in its durable workspace, no repository to clone, approval mode `auto`), so the runner may
   * start its CLI while it dials the hub. The welcome still decides: a welcome that brings something
   * to restore replaces that CLI (docs/DESIGN.md "Runner behaviour (serve)").
   */
  SWITCHYARD_FRESH_SESSION: z.literal('1').optional(),
  /**
   * `1`, only beside SWITCHYARD_FRESH_SESSION: no message was waiting when the hub launched this
   * runner (it was started ahead of the first message), so its CLI takes its first turn, answered
   * by the runner's own model proxy, before it counts as up (docs/DESIGN.md "Starting ahead").
   */
  SWITCHYARD_WARM_UP: z.literal('1').optional(),
  ...IdentityEnvShape,
});
export type LaunchEnv = z.infer<typeof LaunchEnvSchema>;

/** Every name a launcher may set, and nothing else (the local host's override allow-list). */
export const LAUNCH_ENV_NAMES = Object.keys(LaunchEnvSchema.shape) as readonly (keyof LaunchEnv)[];

interface LaunchEnvInput {
  hubUrl: string;
  sessionId: string;
  backend: Backend;
  runnerId: string;
  idleMs: number;
  maxLifetimeMs: number;
  runnerToken: string;
  model: string | null;
  /** The deployment lets repositories be cloned from loopback hosts (the local stack only). */
  repositoryAllowLoopback?: boolean;
  /** The session has nothing to restore at launch (SWITCHYARD_FRESH_SESSION). */
  fresh?: boolean;
  /** No message waits for this runner (SWITCHYARD_WARM_UP; a fresh session's only). */
  warmUp?: boolean;
  /** Where the runner proves its task identity; absent, it sends no proof. */
  identity?: IdentityEndpoint;
}

/** The launch environment for one runner, validated (throws on a value the runner would refuse). */
export function launchEnvironment(r: LaunchEnvInput): LaunchEnv {
  return LaunchEnvSchema.parse({
    SWITCHYARD_HUB_URL: r.hubUrl,
    SWITCHYARD_SESSION_ID: r.sessionId,
    SWITCHYARD_BACKEND: r.backend,
    SWITCHYARD_RUNNER_ID: r.runnerId,
    SWITCHYARD_IDLE_TIMEOUT: `${Math.round(r.idleMs)}ms`,
    SWITCHYARD_MAX_LIFETIME: `${Math.round(r.maxLifetimeMs)}ms`,
    SWITCHYARD_RUNNER_TOKEN: r.runnerToken,
    ...(r.model !== null && { SWITCHYARD_MODEL: r.model }),
    ...(r.repositoryAllowLoopback === true && { SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK: '1' }),
    ...(r.fresh === true && { SWITCHYARD_FRESH_SESSION: '1' }),
    ...(r.fresh === true && r.warmUp === true && { SWITCHYARD_WARM_UP: '1' }),
    ...identityEnv(r.identity),
  });
}
