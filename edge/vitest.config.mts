import path from 'node:path';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

const here = import.meta.dirname;

// Runs the edge tests inside workerd with the bindings from the root wrangler.toml (real D1).
// Migrations are read here, in Node, and applied inside workerd by test/apply-migrations.ts.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(here, 'migrations'));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: path.join(here, '..', 'wrangler.toml') },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            // Runner tokens in the hub tests; deployments set it with `wrangler secret put`.
            RUNNER_TOKEN_SECRET: 'test-only-runner-token-secret-0123456789',
          },
        },
      }),
    ],
    test: {
      name: 'edge',
      root: here,
      include: ['test/**/*.test.ts'],
      // test/unit runs in Node (vitest.unit.config.mts).
      exclude: ['test/unit/**'],
      setupFiles: ['./test/apply-migrations.ts'],
      // Node side of the launcher test: the local runner host (ECS API stand-in), via `inject`.
      globalSetup: ['./test/launcher.global-setup.ts'],
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  };
});
