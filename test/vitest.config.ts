import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'test',
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Polls here wait on a page or a server through the local stack (wrangler dev, a runner, a
    // CLI); on a loaded 2-core machine one round trip can take longer than vitest's 1 s default.
    // A poll that passes returns as soon as it holds; this only bounds one that never does.
    expect: { poll: { timeout: 15_000 } },
  },
});
