import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'broker',
    include: ['test/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
