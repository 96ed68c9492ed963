import type { Clock } from '../clock.ts';
import type { Launcher, LauncherFactory } from '../launchers/launcher.ts';

// What the hub needs from its surroundings: a clock, a launcher and its timings. The Worker
// entry registers the production launcher factory; tests replace any part (same isolate as
// the Durable Object under @cloudflare/vitest-plugin) with `setHubRuntimeForTests`.

export interface HubTimings {
  /** A launched runner must say hello within this, or the launch is `failed`. */
  connectTimeoutMs: number;
  /** A runner whose link dropped (no bye) must be back within this, or it is declared lost. */
  reconnectGraceMs: number;
  /** While waiting for a runner (launch, reconnect) the hub asks the launcher this often. */
  pollMs: number;
  /** After `shutdown`, how long the runner has to say bye before it is stopped by force. */
  stopGraceMs: number;
  /** Runner token lifetime; renewed over the link at half-life. */
  tokenTtlMs: number;
  /** How long a route waits for the runner's `accepted`/`reject`. */
  replyTimeoutMs: number;
  /** Bytes of event JSON one session's log may hold; a runner batch past it ends the session's turns. */
  logMaxBytes: number;
  /** How long the acks of a streaming turn's frames wait to go out together (runner-link/acks.ts); 0: at once. */
  ackDelayMs: number;
  /** Bench only (BENCH_HOPS=1): pass runners' hop stamps on to viewers with the hub's (protocol bench-hops.ts). */
  benchHops?: boolean;
}

interface HubRuntime {
  clock: Clock;
  launcherFor: LauncherFactory;
  timings(env: Env): HubTimings;
}

/** Until a launcher is registered, every launch fails with this reason (visible to viewers). */
const unconfiguredLauncher: Launcher = {
  async start() {
    throw new Error('no runner launcher is configured on this edge');
  },
  async stop() {},
  async describe() {
    return { state: 'unknown' };
  },
  async verifyRunner() {
    return {
      ok: false,
      error: { code: 'config_invalid', message: 'no runner launcher is configured on this edge', retryable: false },
    };
  },
};

function seconds(value: string | undefined, fallback: number, min: number, max: number): number {
  const n = value === undefined || value.trim() === '' ? NaN : Number(value);
  const s = Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : fallback;
  return Math.round(s * 1000);
}

function mebibytes(value: string | undefined, fallback: number, min: number, max: number): number {
  const n = value === undefined || value.trim() === '' ? NaN : Number(value);
  return Math.round((Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : fallback) * 1024 * 1024);
}

export function timingsFromEnv(env: Env): HubTimings {
  return {
    connectTimeoutMs: seconds(env.RUNNER_CONNECT_TIMEOUT_SECONDS, 180, 1, 3600),
    reconnectGraceMs: seconds(env.RUNNER_RECONNECT_GRACE_SECONDS, 60, 1, 3600),
    pollMs: seconds(env.RUNNER_POLL_SECONDS, 5, 0.05, 600),
    stopGraceMs: seconds(env.RUNNER_STOP_GRACE_SECONDS, 30, 1, 600),
    tokenTtlMs: seconds(env.RUNNER_TOKEN_TTL_SECONDS, 30 * 60, 60, 24 * 3600),
    replyTimeoutMs: 10_000,
    // Far above any real conversation, far below a Durable Object's storage.
    logMaxBytes: mebibytes(env.SESSION_LOG_MAX_MB, 256, 1, 10_240),
    ackDelayMs: 250,
    benchHops: env.BENCH_HOPS === '1',
  };
}

let production: LauncherFactory = () => unconfiguredLauncher;
let overrides: Partial<HubRuntime> = {};

/** Called once by the Worker entry with the deployment's launcher factory. */
export function registerLauncherFactory(factory: LauncherFactory): void {
  production = factory;
}

/** Tests only: replace parts of the runtime; pass `{}` to restore. */
export function setHubRuntimeForTests(next: Partial<HubRuntime>): void {
  overrides = next;
}

export function hubRuntime(): HubRuntime {
  return {
    clock: overrides.clock ?? (() => Date.now()),
    launcherFor: overrides.launcherFor ?? production,
    timings: overrides.timings ?? timingsFromEnv,
  };
}
