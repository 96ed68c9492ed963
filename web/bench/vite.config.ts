import path from 'node:path';
import { defineConfig } from 'vite';
import app from '../vite.config.ts';

// Builds bench/harness.html with the app's settings (bench/web/run.ts serves the result).
export default defineConfig({
  ...app,
  root: import.meta.dirname,
  build: {
    ...app.build,
    outDir: process.env.HARNESS_OUT ?? 'dist',
    emptyOutDir: true,
    rolldownOptions: { input: path.join(import.meta.dirname, 'harness.html') },
  },
});
