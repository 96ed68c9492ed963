import type { D1Migration } from 'cloudflare:test';

declare global {
  namespace Cloudflare {
    interface Env {
      /** Injected by vitest.config.mts from edge/migrations. */
      TEST_MIGRATIONS: D1Migration[];
    }
  }
}
