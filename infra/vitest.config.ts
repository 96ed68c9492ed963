import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'infra',
    include: ['test/**/*.test.ts'],
    // Synthesizing stages the runner image's build context; the CLI test runs `cdk synth`.
    testTimeout: 120_000,
  },
});
