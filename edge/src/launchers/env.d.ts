// Secrets the ECS launcher reads, which `wrangler types` cannot see (they are not in
// wrangler.toml). Set with `wrangler secret put NAME [--env production]`; `npm start` passes
// dummy values to `wrangler dev` with `--var`. Validated by ecs-config.ts.
declare namespace Cloudflare {
  interface Env {
    AWS_ACCESS_KEY_ID?: string;
    AWS_SECRET_ACCESS_KEY?: string;
    AWS_SESSION_TOKEN?: string;
  }
}
