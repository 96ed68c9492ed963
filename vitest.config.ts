import { defineConfig } from 'vitest/config';

// Each workspace has its own project so Node tests and workerd tests run under
// the right pool in one `vitest run`.
export default defineConfig({
  test: {
    projects: [
      'protocol',
      'offline-model',
      'broker',
      'runner',
      'test',
      'edge',
      'edge/vitest.unit.config.mts',
      'web',
      'infra',
    ],
  },
});
