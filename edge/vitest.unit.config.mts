import { defineConfig } from 'vitest/config';

// The hub's pure parts (no workerd bindings) run in plain Node: fast, and no Worker needed.
export default defineConfig({
  test: {
    name: 'edge-unit',
    root: import.meta.dirname,
    include: ['test/unit/**/*.test.ts'],
  },
});
