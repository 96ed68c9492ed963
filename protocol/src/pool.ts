import { z } from 'zod';
import { BackendSchema, type Backend } from './backend.ts';
import { UserMessageSchema } from './adapter.ts';
import { CapabilitiesSchema } from './wire.ts';
import { identityEnv, IdentityEnvShape } from './launch-env.ts';
import type { IdentityEndpoint } from './runner-identity.ts';

// The warm runner pool's link (docs/DESIGN.md "Warm runner pool"). A pooled runner is started
// before any session exists: it prepares its sandbox, starts its CLI and dials the pool
// coordinator at POOL_CONNECT_PATH with a pool token. When a session's first message needs a
// runner, the coordinator hands one idle runner a `claim` naming the session, its hub URL and a
// fresh bootstrap token of that session's launch; the runner closes the pool link and dials the
// hub like any launched runner. A pooled runner serves one session at most and is never returned
// to the pool. Heartbeats reuse the runner link's fixed ping/pong strings.

/**
 * The edge route a pooled runner dials: a WebSocket upgrade, `Authorization: Bearer <pool token>`,
 * and its proof of task identity in RUNNER_PROOF_HEADER when its launch named an identity endpoint.
 */
export const POOL_CONNECT_PATH = '/internal/runner/pool';

/**
 * Close codes the coordinator uses; the pooled runner exits on any close before a claim but
 * `tryAgainLater`, on which it dials again.
 */
export const PoolCloseCode = {
  /** The link's identity could not be checked just now (STS unreachable, throttled): dial again later. */
  tryAgainLater: 1013,
  /** A frame failed validation. */
  protocolError: 4400,
  /** The pool token is missing, invalid, expired or already used by another link. */
  unauthorized: 4401,
  /** The coordinator no longer wants this runner: drained (backend switch, size lowered) or aged out. */
  retired: 4410,
  /** The claim was sent; this link has done its job. */
  claimed: 4000,
} as const;

/** The pooled runner's first and only frame besides pings: who it is and that its CLI is up. */
export const PoolHelloSchema = z.strictObject({
  type: z.literal('pool_hello'),
  runnerId: z.string().min(1).max(200),
  backend: BackendSchema,
  /** The model the CLI was started with; null = the CLI's default. */
  model: z.string().min(1).max(200).nullable(),
  cliVersion: z.string().max(200).nullable(),
  capabilities: CapabilitiesSchema,
});
export type PoolHello = z.infer<typeof PoolHelloSchema>;

/**
 * A claim frame with a first message stays within this many bytes (UTF-8): the pooled runner
 * reads at most 64 KiB per frame on its pool link, and the message rides along only when it fits.
 */
export const POOL_CLAIM_MAX_BYTES = 48 * 1024;

/**
 * Coordinator → pooled runner: serve this session. The token is the session launch's bootstrap
 * token (DESIGN "Runner token replay"); the runner dials `hubUrl` with it as a launched runner
 * would. A pooled runner is claimed only by a session with nothing to restore (no transcript), so
 * the claim carries none. `first`: the session's first message, when it is small enough
 * (POOL_CLAIM_MAX_BYTES); the runner hands it to its CLI at once, while it dials the hub, and the
 * hub's copy after the welcome is answered as a duplicate. Without it the message comes after the
 * welcome, as to any runner.
 */
export const PoolClaimSchema = z.strictObject({
  type: z.literal('claim'),
  sessionId: z.string().min(1).max(200),
  hubUrl: z.string().min(1).max(2000),
  runnerToken: z.string().min(1).max(4000),
  first: z.strictObject({ messageId: z.string().min(1).max(200), message: UserMessageSchema }).optional(),
});
export type PoolClaim = z.infer<typeof PoolClaimSchema>;

export const PoolToRunnerSchema = PoolClaimSchema;
export type PoolToRunner = PoolClaim;

/** Environment names only pooled runners get (ECS container overrides / the local host's overrides). */
export const PoolLaunchEnvSchema = z.strictObject({
  /** Where to dial: `ws(s)://<edge>` + POOL_CONNECT_PATH. */
  SWITCHYARD_POOL_URL: z.string().min(1),
  /** Scoped to this pooled runner id; good for one link, and useless at a session hub. */
  SWITCHYARD_POOL_TOKEN: z.string().min(1),
  SWITCHYARD_BACKEND: BackendSchema,
  SWITCHYARD_RUNNER_ID: z.string().min(1),
  /** The session limits current when the runner was pooled; they count from the claim. */
  SWITCHYARD_IDLE_TIMEOUT: z.string().regex(/^\d+ms$/),
  SWITCHYARD_MAX_LIFETIME: z.string().regex(/^\d+ms$/),
  SWITCHYARD_MODEL: z.string().optional(),
  /** As for a session's launch (launch-env.ts): a claim may bring a repository to clone. */
  SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK: z.literal('1').optional(),
  ...IdentityEnvShape,
});
export type PoolLaunchEnv = z.infer<typeof PoolLaunchEnvSchema>;

/** The names a launcher sets only for pooled runners (the rest are launch-env names too). */
export const POOL_ONLY_ENV_NAMES = ['SWITCHYARD_POOL_URL', 'SWITCHYARD_POOL_TOKEN'] as const;

export interface PoolLaunchEnvInput {
  poolUrl: string;
  poolToken: string;
  backend: Backend;
  runnerId: string;
  idleMs: number;
  maxLifetimeMs: number;
  model: string | null;
  /** The deployment lets repositories be cloned from loopback hosts (the local stack only). */
  repositoryAllowLoopback?: boolean;
  /** Where the runner proves its task identity; absent, it sends no proof. */
  identity?: IdentityEndpoint;
}

/** The launch environment of one pooled runner, validated. */
export function poolLaunchEnvironment(r: PoolLaunchEnvInput): PoolLaunchEnv {
  return PoolLaunchEnvSchema.parse({
    SWITCHYARD_POOL_URL: r.poolUrl,
    SWITCHYARD_POOL_TOKEN: r.poolToken,
    SWITCHYARD_BACKEND: r.backend,
    SWITCHYARD_RUNNER_ID: r.runnerId,
    SWITCHYARD_IDLE_TIMEOUT: `${Math.round(r.idleMs)}ms`,
    SWITCHYARD_MAX_LIFETIME: `${Math.round(r.maxLifetimeMs)}ms`,
    ...(r.model !== null && { SWITCHYARD_MODEL: r.model }),
    ...(r.repositoryAllowLoopback === true && { SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK: '1' }),
    ...identityEnv(r.identity),
  });
}

/** The admin setting: idle pooled runners kept per backend (0 = no pool, the default). */
export const PoolSizesSchema = z.strictObject({
  claude: z.number().int().min(0).max(50),
  pi: z.number().int().min(0).max(50),
});
export type PoolSizes = z.infer<typeof PoolSizesSchema>;
