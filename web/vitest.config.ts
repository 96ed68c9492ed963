import { defineConfig } from 'vitest/config';

// The web app's pure parts (SSE framing, the conversation fold, routes, image limits) and the
// API-types staleness check, in Node; the pages themselves are tested in Chromium (test/web/).
export default defineConfig({
  test: {
    name: 'web',
    root: import.meta.dirname,
    include: ['test/**/*.test.ts'],
  },
});
