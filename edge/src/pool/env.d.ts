// Vars the warm runner pool reads that are optional, so not in wrangler.toml (docs/DESIGN.md
// "Warm runner pool").
declare namespace Cloudflare {
  interface Env {
    /** Age limit of an idle pooled runner in seconds; default 1800. */
    POOL_MAX_AGE_SECONDS?: string;
  }
}
