import { randomUUID } from 'node:crypto';
import { type Backend, type LaunchEnv, LaunchEnvSchema, SpawnOptionsSchema } from '@switchyard/protocol';
import { z } from 'zod';
import { runnerError, type Result } from './errors.ts';
import type { IdentityConfig } from './identity/task-identity.ts';

// Environment configuration, validated once at start. Durations accept
// `250ms`, `10s`, `15m`, `2h` or a bare number of milliseconds, so tests can
// use small values and operators can write readable ones. The per-session names a
// launcher sets, and their base rules, are protocol's LaunchEnvSchema.

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  if (!m?.[1]) return undefined;
  const unit = (m[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(m[1]) * UNIT_MS[unit]);
}

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(v)} (e.g. 500ms, 10s, 15m, 2h)` });
        return z.NEVER;
      }
      return ms;
    });

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const ExecutableOverride = z
  .string()
  .transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON {"command": ..., "prefixArgs": [...]}' });
      return z.NEVER;
    }
  })
  .pipe(
    z.object({
      command: z.string().min(1),
      prefixArgs: z.array(z.string()).default([]),
      version: z.string().default('override'),
    }),
  );

const launch = LaunchEnvSchema.shape;

/** Model selection and CLI settings shared by serve, once and probe. */
const CommonEnv = z.object({
  SWITCHYARD_MODEL_URL: z.url({ protocol: /^https?$/ }).optional(),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  SWITCHYARD_MODEL: launch.SWITCHYARD_MODEL,
  SWITCHYARD_CLI_RETRIES: z.coerce.number().int().min(0).max(10).optional(),
  SWITCHYARD_CLI_RETRY_BASE_MS: z.coerce.number().int().min(0).optional(),
  /** Dev and tests only: run this instead of the pinned CLI (e.g. a fake CLI that ignores interrupts). */
  SWITCHYARD_CLI_EXECUTABLE: ExecutableOverride.optional(),
  SWITCHYARD_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** Node's compile cache for a CLI that runs on Node (pi); read-only to the CLI. The image fills one. */
  SWITCHYARD_CLI_COMPILE_CACHE: SpawnOptionsSchema.shape.compileCache,
});

/** Hosts whose traffic stays on this machine. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '[::1]' || h === '::1';
}

/**
 * The launch environment: every name of protocol's LaunchEnvSchema (`satisfies` keeps the two
 * in step), read with the runner's defaults and stricter rules where it has them.
 */
const ServeLaunchEnv = {
  // The link carries the runner credential, user messages and the transcript: plain ws:// only
  // where it never leaves the machine.
  SWITCHYARD_HUB_URL: launch.SWITCHYARD_HUB_URL.pipe(
    z
      .url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' })
      .refine((u) => new URL(u).protocol === 'wss:' || isLoopbackHost(new URL(u).hostname), {
        error: 'must be wss:// (ws:// only to a loopback host: localhost, 127.0.0.0/8, [::1])',
      }),
  ),
  SWITCHYARD_SESSION_ID: launch.SWITCHYARD_SESSION_ID.max(200),
  SWITCHYARD_RUNNER_TOKEN: launch.SWITCHYARD_RUNNER_TOKEN,
  // Optional here: `serve` started by hand or by a test gets a random id.
  SWITCHYARD_RUNNER_ID: launch.SWITCHYARD_RUNNER_ID.max(100).optional(),
  SWITCHYARD_BACKEND: launch.SWITCHYARD_BACKEND,
  // Any duration (a superset of the launcher's `<n>ms`), with defaults for a runner started by hand.
  SWITCHYARD_IDLE_TIMEOUT: duration('15m'),
  SWITCHYARD_MAX_LIFETIME: duration('8h'),
  SWITCHYARD_MODEL: launch.SWITCHYARD_MODEL,
  SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK: launch.SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK,
  SWITCHYARD_FRESH_SESSION: launch.SWITCHYARD_FRESH_SESSION,
  SWITCHYARD_WARM_UP: launch.SWITCHYARD_WARM_UP,
  // The proof travels to the edge, which forwards it; only STS's own answer is trusted.
  SWITCHYARD_IDENTITY_URL: launch.SWITCHYARD_IDENTITY_URL,
  SWITCHYARD_IDENTITY_REGION: launch.SWITCHYARD_IDENTITY_REGION,
} satisfies Record<keyof LaunchEnv, z.ZodType>;

/** Set by ECS in every task with a task role (and by the local runner host), never by a launcher. */
const ContainerCredentialsEnv = {
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: z.string().startsWith('/', 'must be a path').optional(),
  // Plain http only to loopback, the rule the AWS SDK applies to this variable.
  AWS_CONTAINER_CREDENTIALS_FULL_URI: z
    .url({ protocol: /^https?$/ })
    .refine((u) => new URL(u).protocol === 'https:' || isLoopbackHost(new URL(u).hostname), {
      error: 'must be https:// (http:// only to a loopback host)',
    })
    .optional(),
  AWS_CONTAINER_AUTHORIZATION_TOKEN: z.string().min(1).optional(),
};

/** ECS's link-local address for the credentials of the task's role. */
const ECS_CREDENTIALS_HOST = 'http://169.254.170.2';

const ServeEnv = CommonEnv.extend({
  ...ServeLaunchEnv,
  SWITCHYARD_WORKSPACE: z.string().min(1).optional(),
  SWITCHYARD_STATE_DIR: z.string().min(1).optional(),
  SWITCHYARD_INTERRUPT_DEADLINE: duration('10s'),
  SWITCHYARD_STALL_TIMEOUT: duration('120s'),
  SWITCHYARD_TOOL_STALL_TIMEOUT: duration('15m'),
  SWITCHYARD_CLI_START_TIMEOUT: duration('60s'),
  SWITCHYARD_KILL_GRACE: duration('5s'),
  SWITCHYARD_SHUTDOWN_DEADLINE: duration('25s'),
  SWITCHYARD_SHUTDOWN_FINISH: duration('5s'),
  SWITCHYARD_CLI_STOP_GRACE: duration('3s'),
  SWITCHYARD_BUFFER_MAX_EVENTS: positiveInt(20_000),
  SWITCHYARD_BUFFER_MAX_BYTES: positiveInt(64 * 1024 * 1024),
  SWITCHYARD_LINK_BACKOFF_BASE: duration('250ms'),
  SWITCHYARD_LINK_BACKOFF_MAX: duration('10s'),
  SWITCHYARD_LINK_PING_INTERVAL: duration('15s'),
  SWITCHYARD_LINK_WELCOME_TIMEOUT: duration('10s'),
  /** Bench only: stamp each event's hops on the wire (protocol's bench-hops.ts). */
  SWITCHYARD_BENCH_HOPS: z.enum(['0', '1']).optional(),
  /** Compact V8's heap while the CLI starts and after each turn (serve/heap-compaction.ts); 0 leaves it to V8. */
  SWITCHYARD_COMPACT_HEAP: z.enum(['0', '1']).default('1'),
  /** The whole repository clone (resolve, fetch, checkout); within SWITCHYARD_CLI_START_TIMEOUT, which it counts against. */
  SWITCHYARD_CLONE_TIMEOUT: duration('40s'),
  ...ContainerCredentialsEnv,
}).superRefine((e, ctx) => {
  if ((e.SWITCHYARD_IDENTITY_URL === undefined) !== (e.SWITCHYARD_IDENTITY_REGION === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [e.SWITCHYARD_IDENTITY_URL === undefined ? 'SWITCHYARD_IDENTITY_URL' : 'SWITCHYARD_IDENTITY_REGION'],
      message: 'required with SWITCHYARD_IDENTITY_URL and SWITCHYARD_IDENTITY_REGION: set both or neither',
    });
  }
  const hasSource =
    e.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI !== undefined || e.AWS_CONTAINER_CREDENTIALS_FULL_URI !== undefined;
  if (e.SWITCHYARD_IDENTITY_URL !== undefined && !hasSource) {
    ctx.addIssue({
      code: 'custom',
      path: ['SWITCHYARD_IDENTITY_URL'],
      message:
        'the runner must prove its task identity, but has no task role credentials ' +
        '(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or AWS_CONTAINER_CREDENTIALS_FULL_URI; ' +
        'give the task definition a task role)',
    });
  }
});

export interface CommonConfig {
  model: ModelSelection;
  modelName: string | undefined;
  retry: { maxRetries: number; baseDelayMs: number } | undefined;
  executableOverride: { command: string; prefixArgs: string[]; version: string } | undefined;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** SWITCHYARD_CLI_COMPILE_CACHE (docs/DESIGN.md "Runner memory" → "The CLI's compile cache"). */
  cliCompileCache: string | undefined;
}

/**
 * Where the CLI's model traffic goes (DESIGN "Configuration"). `endpoint`: an
 * Anthropic-Messages endpoint such as the offline model; `provider`: the real
 * provider with the operator's key.
 */
export type ModelSelection =
  | { kind: 'endpoint'; baseUrl: string; apiKey: string | undefined }
  | { kind: 'provider'; apiKey: string }
  | { kind: 'none' };

export interface ServeConfig extends CommonConfig {
  hubUrl: string;
  sessionId: string;
  runnerToken: string;
  runnerId: string;
  backend: Backend;
  workspace: string;
  stateDir: string | undefined;
  timings: {
    idleMs: number;
    maxLifetimeMs: number;
    interruptDeadlineMs: number;
    stallMs: number;
    toolStallMs: number;
    cliStartMs: number;
    killGraceMs: number;
    shutdownDeadlineMs: number;
    shutdownFinishMs: number;
    cliStopGraceMs: number;
  };
  buffer: { maxFrames: number; maxBytes: number };
  link: { backoffBaseMs: number; backoffMaxMs: number; pingIntervalMs: number; welcomeTimeoutMs: number };
  /** Bench only (SWITCHYARD_BENCH_HOPS=1): events and `events` frames carry hop stamps. */
  benchHops: boolean;
  /** SWITCHYARD_COMPACT_HEAP: compact V8's heap where the runner is between things (serve/heap-compaction.ts). */
  compactHeap: boolean;
  /** Cloning the session's repository (docs/DESIGN.md "Start from a repository"). */
  clone: { allowLoopback: boolean; timeoutMs: number };
  /** The hub launched this runner with nothing to restore: its CLI may start before the welcome. */
  freshSession: boolean;
  /**
   * A fresh session's runner no message waited for: the CLI started before the welcome takes its
   * first turn (cli/warm-up.ts, answered by the model proxy) before it counts as up.
   */
  warmUp: boolean;
  /** Where and with what the runner proves its task identity in each hello; absent, it sends no proof. */
  identity: IdentityConfig | undefined;
}

type Env = Record<string, string | undefined>;

export function loadCommonConfig(env: Env): Result<CommonConfig> {
  const parsed = CommonEnv.safeParse(nonEmpty(env));
  if (!parsed.success) return { ok: false, error: configError(parsed.error) };
  return { ok: true, value: common(parsed.data) };
}

export function loadServeConfig(env: Env, cwd: string): Result<ServeConfig> {
  const parsed = ServeEnv.safeParse(nonEmpty(env));
  if (!parsed.success) return { ok: false, error: configError(parsed.error) };
  const e = parsed.data;
  return {
    ok: true,
    value: {
      ...common(e),
      hubUrl: e.SWITCHYARD_HUB_URL,
      sessionId: e.SWITCHYARD_SESSION_ID,
      runnerToken: e.SWITCHYARD_RUNNER_TOKEN,
      runnerId: e.SWITCHYARD_RUNNER_ID ?? randomUUID(),
      backend: e.SWITCHYARD_BACKEND,
      workspace: e.SWITCHYARD_WORKSPACE ?? cwd,
      stateDir: e.SWITCHYARD_STATE_DIR,
      timings: {
        idleMs: e.SWITCHYARD_IDLE_TIMEOUT,
        maxLifetimeMs: e.SWITCHYARD_MAX_LIFETIME,
        interruptDeadlineMs: e.SWITCHYARD_INTERRUPT_DEADLINE,
        stallMs: e.SWITCHYARD_STALL_TIMEOUT,
        toolStallMs: e.SWITCHYARD_TOOL_STALL_TIMEOUT,
        cliStartMs: e.SWITCHYARD_CLI_START_TIMEOUT,
        killGraceMs: e.SWITCHYARD_KILL_GRACE,
        shutdownDeadlineMs: e.SWITCHYARD_SHUTDOWN_DEADLINE,
        shutdownFinishMs: e.SWITCHYARD_SHUTDOWN_FINISH,
        cliStopGraceMs: e.SWITCHYARD_CLI_STOP_GRACE,
      },
      buffer: { maxFrames: e.SWITCHYARD_BUFFER_MAX_EVENTS, maxBytes: e.SWITCHYARD_BUFFER_MAX_BYTES },
      link: {
        backoffBaseMs: e.SWITCHYARD_LINK_BACKOFF_BASE,
        backoffMaxMs: e.SWITCHYARD_LINK_BACKOFF_MAX,
        pingIntervalMs: e.SWITCHYARD_LINK_PING_INTERVAL,
        welcomeTimeoutMs: e.SWITCHYARD_LINK_WELCOME_TIMEOUT,
      },
      benchHops: e.SWITCHYARD_BENCH_HOPS === '1',
      compactHeap: e.SWITCHYARD_COMPACT_HEAP === '1',
      clone: {
        allowLoopback: e.SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK === '1',
        timeoutMs: e.SWITCHYARD_CLONE_TIMEOUT,
      },
      freshSession: e.SWITCHYARD_FRESH_SESSION === '1',
      warmUp: e.SWITCHYARD_FRESH_SESSION === '1' && e.SWITCHYARD_WARM_UP === '1',
      identity:
        e.SWITCHYARD_IDENTITY_URL === undefined || e.SWITCHYARD_IDENTITY_REGION === undefined
          ? undefined
          : {
              endpoint: { url: e.SWITCHYARD_IDENTITY_URL, region: e.SWITCHYARD_IDENTITY_REGION },
              credentials: {
                // ECS sets the relative URI; the full one is for hosts like the local runner host.
                // The relative one wins, as in the AWS SDK.
                url:
                  e.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI !== undefined
                    ? `${ECS_CREDENTIALS_HOST}${e.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI}`
                    : (e.AWS_CONTAINER_CREDENTIALS_FULL_URI ?? ''),
                authorization: e.AWS_CONTAINER_AUTHORIZATION_TOKEN,
              },
            },
    },
  };
}

function common(e: z.infer<typeof CommonEnv>): CommonConfig {
  const model: ModelSelection = e.SWITCHYARD_MODEL_URL
    ? { kind: 'endpoint', baseUrl: e.SWITCHYARD_MODEL_URL, apiKey: e.ANTHROPIC_API_KEY }
    : e.ANTHROPIC_API_KEY
      ? { kind: 'provider', apiKey: e.ANTHROPIC_API_KEY }
      : { kind: 'none' };
  // The retry budget for rate limits, overload and unavailability (auth, billing and invalid
  // requests end at the first failure). The CLIs' own defaults differ (claude 10 retries, ~3 minutes; pi 3
  // at 2/4/8 s); 5 from 0.5 s doubling is ~15–20 s of waiting in both, each wait a turn.retry.
  const retry = { maxRetries: e.SWITCHYARD_CLI_RETRIES ?? 5, baseDelayMs: e.SWITCHYARD_CLI_RETRY_BASE_MS ?? 500 };
  return {
    model,
    modelName: e.SWITCHYARD_MODEL,
    retry,
    executableOverride: e.SWITCHYARD_CLI_EXECUTABLE,
    logLevel: e.SWITCHYARD_LOG_LEVEL,
    cliCompileCache: e.SWITCHYARD_CLI_COMPILE_CACHE,
  };
}

/** An empty variable means "unset" (compose files and shells produce them). */
function nonEmpty(env: Env): Env {
  const out: Env = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

function configError(error: z.ZodError) {
  // Names the variable, never echoes a value (one of them is the runner token).
  const problems = error.issues.map((i) => `${i.path.join('.') || 'environment'}: ${i.message}`);
  return runnerError('config_invalid', problems.join('; '));
}
