import { Hono } from 'hono';
import { createApp } from '../src/app.ts';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../src/auth/password.ts';

// Benchmark entry (bench/edge/run.ts serves it with `wrangler dev`): the real app plus two
// reference routes in the same workerd, so ratios compare like with like.
export { SessionHub } from '../src/hub/session-hub.ts';
export { PoolCoordinator } from '../src/pool/coordinator.ts';

const app = createApp();
const reference = new Hono();
// Under /api/ because only /api/*, /internal/* and /healthz reach the Worker (wrangler.toml
// run_worker_first); any other path is answered by the static assets' SPA fallback.
// The floor: a bare Hono route, no middleware, no D1.
reference.get('/api/__bench/bare', (c) => c.json({ ok: true }));
// PBKDF2 alone (one verification at the production iteration count), to split login's cost.
reference.get('/api/__bench/pbkdf2', async (c) =>
  c.json({ ok: await verifyPassword('bench password', DUMMY_PASSWORD_HASH) }),
);

export default {
  fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    return pathname.startsWith('/api/__bench/') ? reference.fetch(request, env, ctx) : app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
