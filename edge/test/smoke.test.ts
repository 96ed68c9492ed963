import { env, exports } from 'cloudflare:workers';
import { expect, it } from 'vitest';

it('serves healthz through the Worker entry', async () => {
  const res = await exports.default.fetch('http://localhost/healthz');
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true });
  const row = await env.DB.prepare('SELECT version FROM settings WHERE id = 1').first();
  expect(row).toEqual({ version: 0 });
});
