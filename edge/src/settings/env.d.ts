// Optional vars the settings routes read (not in wrangler.toml's dev vars, so not in the
// generated types).
declare namespace Cloudflare {
  interface Env {
    /**
     * How long the backend-switch probe may take, in seconds. Overrides the app default (15 s):
     * production probes run as a one-off Fargate task, whose cold start alone takes tens of seconds.
     */
    PROBE_TIMEOUT_SECONDS?: string;
  }
}
interface Env extends Cloudflare.Env {}
