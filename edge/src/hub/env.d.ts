// Vars and secrets the session hub reads that `wrangler types` cannot see (secrets, and vars
// that are optional so they do not belong in wrangler.toml). All optional: see DESIGN.md
// "Session hub decisions" for defaults.
declare namespace Cloudflare {
  interface Env {
    /** HMAC key for runner tokens (wrangler secret; `.dev.vars` locally). At least 32 chars. */
    RUNNER_TOKEN_SECRET?: string;
    /** ws(s) URL runners dial; default: the origin of the request that launched the runner. */
    RUNNER_HUB_URL?: string;
    RUNNER_CONNECT_TIMEOUT_SECONDS?: string;
    RUNNER_RECONNECT_GRACE_SECONDS?: string;
    RUNNER_POLL_SECONDS?: string;
    RUNNER_STOP_GRACE_SECONDS?: string;
    RUNNER_TOKEN_TTL_SECONDS?: string;
    /** Largest event log of one session, in MiB; default 256. */
    SESSION_LOG_MAX_MB?: string;
    /** SSE heartbeat comment interval; default 15 (must stay under 30). */
    SSE_HEARTBEAT_SECONDS?: string;
    /** Bench only: `1` passes the runner's hop stamps on to viewers with the hub's own (protocol bench-hops.ts). */
    BENCH_HOPS?: string;
  }
}
interface Env extends Cloudflare.Env {}
