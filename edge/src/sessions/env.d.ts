// Vars the session routes and the hub's launches read that `wrangler types` cannot see (optional,
// so they do not belong in wrangler.toml's production vars).
declare namespace Cloudflare {
  interface Env {
    /**
     * `1`: repositories may be cloned from loopback hosts (127/8, ::1, localhost). Only the local
     * stack sets it (scripts/lib/stack.ts), so tests can serve a repository; never in production.
     */
    REPOSITORY_ALLOW_LOOPBACK?: string;
  }
}
