import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { issueToken } from '../src/auth/token-store.ts';
import { until } from '../../test/helpers/poll.ts';
import { createUser, passwordHashOf } from './helpers.ts';

// The deployed Worker: the real clock, the ECS launcher (unconfigured here: no AWS credentials)
// and the backend probe wired through it.
describe('the Worker entry', () => {
  it('reports pi unavailable with a clear reason while the launcher is not configured, and refuses to switch to it', async () => {
    const admin = await createUser({ role: 'admin' });
    const issued = await issueToken(env.DB, {
      userId: admin.id,
      kind: 'session',
      name: null,
      now: Date.now(),
      ttlMs: 60_000,
      passwordHash: await passwordHashOf(admin.id),
    });
    const secret = issued?.secret ?? '';
    const headers = { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' };

    // An admin's read starts the probe in the background and answers the stored state at once;
    // reading again (polled, never slept) shows the probe's answer.
    type Pub = { backends: Array<{ name: string; available: boolean; reason?: string }> };
    const pi = await until("the probe's answer", async () => {
      const pub = await exports.default.fetch('http://localhost/api/settings', { headers });
      expect(pub.status).toBe(200);
      const found = ((await pub.json()) as Pub).backends.find((b) => b.name === 'pi');
      return found?.reason !== 'not checked yet' && found;
    });
    expect(pi?.available).toBe(false);
    expect(pi?.reason).toMatch(/ECS launcher is not configured/);

    const put = await exports.default.fetch('http://localhost/api/admin/settings', {
      method: 'PUT',
      headers,
      body: JSON.stringify({ llmBackend: 'pi' }),
    });
    expect(put.status).toBe(400);
    const err = (await put.json()) as { error: { code: string; message: string; field: string } };
    expect(err.error).toMatchObject({ code: 'backend_unavailable', field: 'llmBackend' });
    expect(err.error.message).toMatch(/To fix: /);

    const claude = await exports.default.fetch('http://localhost/api/admin/settings', {
      method: 'PUT',
      headers,
      body: JSON.stringify({ llmBackend: 'claude', sessionIdleMinutes: 20 }),
    });
    expect(claude.status).toBe(200);
  });

  it('answers a non-WebSocket request to a session hub with an error value', async () => {
    const stub = env.SESSION_HUB.get(env.SESSION_HUB.idFromName('x'));
    const res = await stub.fetch('http://hub/');
    expect(res.status).toBe(426);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });
});
