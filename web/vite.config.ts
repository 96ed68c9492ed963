import { defineConfig } from 'vite';

// The browser app, built to web/dist and served by the Worker as static assets
// (wrangler.toml `[assets]`). `npm run dev -w web` serves it with hot reload and sends /api
// to the edge that `npm start` runs.
export default defineConfig({
  root: import.meta.dirname,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // Every page is one small bundle; no inline assets (the CSP allows only 'self').
    assetsInlineLimit: 0,
  },
  server: {
    proxy: { '/api': { target: process.env.SWITCHYARD_EDGE_URL ?? 'http://127.0.0.1:8787', changeOrigin: false } },
  },
});
