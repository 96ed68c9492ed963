import { env } from 'cloudflare:workers';
import { beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { PublicSettingsSchema } from '../src/settings/routes.ts';
import { DEFAULT_SETTINGS, type Settings } from '../src/settings/schema.ts';
import { until } from '../../test/helpers/poll.ts';
import { adminWithToken, call, expectError, makeApp, SpyProbe, userWithToken } from './helpers.ts';

type PublicSettings = z.infer<typeof PublicSettingsSchema>;

beforeEach(async () => {
  // Settings and probe answers are global rows; every test starts from the defaults.
  await env.DB.batch([
    env.DB.prepare('DELETE FROM backend_status'),
    env.DB.prepare('DELETE FROM probe_lease'),
    env.DB.prepare("UPDATE settings SET value = '{}', version = 0"),
    env.DB.prepare('DELETE FROM audit_log'),
  ]);
});

async function setup(probe = new SpyProbe(), extra: { probeTimeoutMs?: number } = {}) {
  const { app, clock } = makeApp({ probe, ...extra });
  const admin = await adminWithToken(clock);
  const user = await userWithToken(clock);
  return { app, clock, probe, admin, token: admin.token, userToken: user.token };
}

async function settingsAudit() {
  const { results } = await env.DB.prepare("SELECT * FROM audit_log WHERE action = 'settings.update' ORDER BY id").all<
    Record<string, unknown>
  >();
  return results.map((r) => ({ ...r, before: JSON.parse(String(r.before)), after: JSON.parse(String(r.after)) }));
}

const unusable = {
  available: false,
  reason: 'pi is not installed in the runner image',
  fix: 'rebuild the runner image with pi',
};

/** Polls D1 until both backends have a stored answer (background probes run after the response). */
async function storedAnswers(n = 2): Promise<void> {
  await until('the background probes to store their answers', async () => {
    const row = await env.DB.prepare('SELECT count(*) AS n FROM backend_status').first<{ n: number }>();
    const leases = await env.DB.prepare('SELECT count(*) AS n FROM probe_lease').first<{ n: number }>();
    return row?.n === n && leases?.n === 0;
  });
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('GET /api/settings', () => {
  it('shows the current backend and each backend’s last probed availability to any user', async () => {
    const probe = new SpyProbe({ claude: { available: true, version: '2.1.0' }, pi: unusable });
    const { app, clock, userToken, token } = await setup(probe);
    // Nothing probed yet: a user reads that, and starts nothing.
    const before = await call<PublicSettings>(app, 'GET', '/api/settings', { token: userToken });
    expect(before.status).toBe(200);
    expect(before.body.backends).toEqual([
      { name: 'claude', available: false, reason: 'not checked yet', checkedAt: null },
      { name: 'pi', available: false, reason: 'not checked yet', checkedAt: null },
    ]);
    expect(probe.calls).toEqual([]);
    // An admin's read starts the probes in the background and answers at once.
    expect((await call(app, 'GET', '/api/settings', { token })).status).toBe(200);
    await storedAnswers();
    const r = await call(app, 'GET', '/api/settings', { token: userToken });
    expect(r.body).toEqual({
      llmBackend: 'claude',
      backends: [
        { name: 'claude', available: true, version: '2.1.0', checkedAt: new Date(clock.now()).toISOString() },
        { name: 'pi', available: false, reason: unusable.reason, checkedAt: new Date(clock.now()).toISOString() },
      ],
      maxMessageBytes: DEFAULT_SETTINGS.maxMessageBytes,
      maxFileBytes: DEFAULT_SETTINGS.workspaceMaxFileBytes,
    });
    // An admin also sees how to fix an unusable backend.
    const asAdmin = await call<PublicSettings>(app, 'GET', '/api/settings', { token });
    expect(asAdmin.body.backends.find((b) => b.name === 'pi')).toMatchObject({
      name: 'pi',
      ...unusable,
    });
  });

  it('an admin read reuses a stored answer within the cache window and refreshes it after', async () => {
    const { app, clock, probe, token, userToken } = await setup();
    await call(app, 'GET', '/api/settings', { token });
    await storedAnswers();
    await call(app, 'GET', '/api/settings', { token });
    expect(probe.calls.sort()).toEqual(['claude', 'pi']);
    clock.advance(5 * 60_000);
    await call(app, 'GET', '/api/settings', { token: userToken });
    expect(probe.calls).toHaveLength(2);
    await call(app, 'GET', '/api/settings', { token });
    expect(probe.calls).toHaveLength(4);
    await storedAnswers();
  });

  it('probe amplification: 50 parallel user reads start no probe; 50 parallel admin reads start one per backend', async () => {
    const gate = deferred<{ available: boolean }>();
    const probe = new SpyProbe({ claude: () => gate.promise, pi: () => gate.promise });
    const { app, clock, token, userToken } = await setup(probe, { probeTimeoutMs: 60_000 });
    const users = await Promise.all(
      Array.from({ length: 50 }, () => call(app, 'GET', '/api/settings', { token: userToken })),
    );
    expect(users.every((r) => r.status === 200)).toBe(true);
    expect(probe.calls).toEqual([]);

    const admins = await Promise.all(Array.from({ length: 50 }, () => call(app, 'GET', '/api/settings', { token })));
    expect(admins.every((r) => r.status === 200)).toBe(true);
    expect(probe.calls.sort()).toEqual(['claude', 'pi']);
    // While they run, a switch to pi cannot start a second pi probe.
    const busy = expectError(
      await call(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: 'pi' } }),
      409,
      'conflict',
    );
    expect(busy.field).toBe('llmBackend');
    gate.resolve({ available: true });
    await storedAnswers();
    expect(probe.calls).toHaveLength(2);

    // A probe whose isolate died leaves its lease behind; it expires after the timeout and a margin.
    clock.advance(5 * 60_000);
    await env.DB.prepare("INSERT INTO probe_lease (name, lease_id, until) VALUES ('pi', 'dead', ?)")
      .bind(clock.now() + 1000)
      .run();
    await call(app, 'GET', '/api/settings', { token });
    expect(probe.calls.filter((b) => b === 'pi')).toHaveLength(1);
    clock.advance(1000);
    await call(app, 'GET', '/api/settings', { token });
    expect(probe.calls.filter((b) => b === 'pi')).toHaveLength(2);
    await storedAnswers();
  });

  it('answers 401 without credentials', async () => {
    const { app } = await setup();
    expectError(await call(app, 'GET', '/api/settings'), 401);
  });
});

describe('GET /api/admin/settings', () => {
  it('returns the full settings, defaults first', async () => {
    const { app, token } = await setup();
    const r = await call(app, 'GET', '/api/admin/settings', { token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(DEFAULT_SETTINGS);
  });

  it('serves defaults for stored values that are unreadable, field by field', async () => {
    const { app, token } = await setup();
    await env.DB.prepare('UPDATE settings SET value = ?')
      .bind(JSON.stringify({ sessionIdleMinutes: 'abc', maxMessageBytes: 4096 }))
      .run();
    expect((await call(app, 'GET', '/api/admin/settings', { token })).body).toEqual({
      ...DEFAULT_SETTINGS,
      maxMessageBytes: 4096,
    });
    await env.DB.prepare("UPDATE settings SET value = 'not json'").run();
    expect((await call(app, 'GET', '/api/admin/settings', { token })).body).toEqual(DEFAULT_SETTINGS);
  });
});

describe('PUT /api/admin/settings', () => {
  it('applies a partial update and audits who, when, before and after', async () => {
    const { app, clock, admin, token } = await setup();
    const r = await call<Settings>(app, 'PUT', '/api/admin/settings', { token, body: { sessionIdleMinutes: 30 } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...DEFAULT_SETTINGS, sessionIdleMinutes: 30 });
    expect((await call<Settings>(app, 'GET', '/api/admin/settings', { token })).body.sessionIdleMinutes).toBe(30);
    const audit = await settingsAudit();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor_id: admin.user.id,
      actor_username: admin.user.username,
      at: clock.now(),
      target: 'settings',
      before: { sessionIdleMinutes: 15 },
      after: { sessionIdleMinutes: 30 },
    });
  });

  it('audits every change and nothing for a no-op', async () => {
    const { app, token } = await setup();
    await call(app, 'PUT', '/api/admin/settings', { token, body: { maxMessageBytes: 2048 } });
    await call(app, 'PUT', '/api/admin/settings', {
      token,
      body: { defaultModel: { pi: 'anthropic/claude-sonnet-4' } },
    });
    await call(app, 'PUT', '/api/admin/settings', {
      token,
      body: { defaultModel: { claude: 'opus' }, sessionMaxMinutes: 60 },
    });
    await call(app, 'PUT', '/api/admin/settings', { token, body: { maxMessageBytes: 2048 } });
    const audit = await settingsAudit();
    expect(audit.map((a) => [a.before, a.after])).toEqual([
      [{ maxMessageBytes: DEFAULT_SETTINGS.maxMessageBytes }, { maxMessageBytes: 2048 }],
      [
        { defaultModel: { claude: null, pi: null } },
        { defaultModel: { claude: null, pi: 'anthropic/claude-sonnet-4' } },
      ],
      [
        {
          defaultModel: { claude: null, pi: 'anthropic/claude-sonnet-4' },
          sessionMaxMinutes: DEFAULT_SETTINGS.sessionMaxMinutes,
        },
        { defaultModel: { claude: 'opus', pi: 'anthropic/claude-sonnet-4' }, sessionMaxMinutes: 60 },
      ],
    ]);
    const cleared = await call<Settings>(app, 'PUT', '/api/admin/settings', {
      token,
      body: { defaultModel: { pi: null } },
    });
    expect(cleared.body.defaultModel).toEqual({ claude: 'opus', pi: null });
  });

  it('answers 400 naming llmBackend and echoing the value for anything but claude or pi', async () => {
    const { app, probe, token } = await setup();
    for (const value of ['gpt', 'Claude', '', 5, null, ['pi']]) {
      const err = expectError(
        await call(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: value } }),
        400,
        'invalid_request',
      );
      expect(err.field).toBe('llmBackend');
      expect(err.message).toContain('claude, pi');
      expect(err.message).toContain(JSON.stringify(value));
    }
    expect(probe.calls).toEqual([]);
    expect(await settingsAudit()).toEqual([]);
  });

  it('answers 400 naming the field for other invalid input', async () => {
    const { app, token } = await setup();
    const bad = async (body: unknown) =>
      expectError(await call(app, 'PUT', '/api/admin/settings', { token, body }), 400, 'invalid_request');
    expect((await bad({})).message).toMatch(/at least one/);
    expect((await bad({ llmBacknd: 'pi' })).field).toBe('llmBacknd');
    expect(await bad({ sessionIdleMinutes: 0 })).toMatchObject({
      field: 'sessionIdleMinutes',
      message: 'sessionIdleMinutes: must be a whole number from 1 to 1440',
    });
    expect((await bad({ sessionIdleMinutes: 24 * 60 + 1 })).field).toBe('sessionIdleMinutes');
    expect((await bad({ sessionIdleMinutes: 1.5 })).field).toBe('sessionIdleMinutes');
    expect((await bad({ sessionIdleMinutes: '15' })).field).toBe('sessionIdleMinutes');
    expect((await bad({ unusedRunnerIdleMinutes: 0 })).field).toBe('unusedRunnerIdleMinutes');
    expect((await bad({ unusedRunnerIdleMinutes: 2.5 })).field).toBe('unusedRunnerIdleMinutes');
    expect(await bad({ maxMessageBytes: 11 * 1024 * 1024 })).toMatchObject({
      field: 'maxMessageBytes',
      message: 'maxMessageBytes: must be a whole number from 1024 to 10485760',
    });
    expect((await bad({ workspaceMaxFiles: 'many' })).message).toBe(
      'workspaceMaxFiles: must be a whole number from 1 to 100000',
    );
    expect((await bad({ defaultModel: { gpt: 'x' } })).field).toBe('defaultModel.gpt');
    expect((await bad({ defaultModel: { pi: 'has spaces' } })).field).toBe('defaultModel.pi');
    const cross = await bad({ sessionMaxMinutes: 10 });
    expect(cross.field).toBe('sessionMaxMinutes');
    expect(cross.message).toMatch(/sessionIdleMinutes/);
    expect(await settingsAudit()).toEqual([]);
  });

  it('answers 413 for a huge body and 415 for a non-JSON one', async () => {
    const { app, token } = await setup();
    expectError(
      await call(app, 'PUT', '/api/admin/settings', {
        token,
        raw: JSON.stringify({ defaultModel: { pi: 'x'.repeat(70_000) } }),
      }),
      413,
    );
    expectError(
      await call(app, 'PUT', '/api/admin/settings', {
        token,
        raw: 'llmBackend=pi',
        contentType: 'text/plain',
      }),
      415,
    );
  });
});

describe('the backend switch', () => {
  it('to pi: probes pi once and switches when it is usable', async () => {
    const { app, probe, admin, token, userToken } = await setup(
      new SpyProbe({ pi: { available: true, version: '0.73.1' } }),
    );
    const r = await call<Settings>(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: 'pi' } });
    expect(r.status).toBe(200);
    expect(r.body.llmBackend).toBe('pi');
    expect(probe.calls).toEqual(['pi']);
    expect((await call<PublicSettings>(app, 'GET', '/api/settings', { token: userToken })).body.llmBackend).toBe('pi');
    expect(await settingsAudit()).toMatchObject([
      { actor_id: admin.user.id, before: { llmBackend: 'claude' }, after: { llmBackend: 'pi' } },
    ]);
  });

  it('to pi: answers 400 with the probe’s reason and fix when pi is unusable, and changes nothing', async () => {
    const { app, probe, token, userToken } = await setup(new SpyProbe({ pi: unusable }));
    const r = await call(app, 'PUT', '/api/admin/settings', {
      token,
      body: { llmBackend: 'pi', sessionIdleMinutes: 20 },
    });
    const err = expectError(r, 400, 'backend_unavailable');
    expect(err.field).toBe('llmBackend');
    expect(err.message).toContain(unusable.reason);
    expect(err.message).toContain(unusable.fix);
    expect(probe.calls).toEqual(['pi']);
    expect((await call(app, 'GET', '/api/admin/settings', { token })).body).toEqual(DEFAULT_SETTINGS);
    expect(await settingsAudit()).toEqual([]);
    // Users see the fresh answer without another probe.
    const pub = await call<PublicSettings>(app, 'GET', '/api/settings', { token: userToken });
    expect(pub.body.backends.find((b) => b.name === 'pi')).toEqual({
      name: 'pi',
      available: false,
      reason: unusable.reason,
      checkedAt: expect.any(String),
    });
  });

  it('to pi: a probe that throws, hangs or answers garbage is "unusable" with a reason, not a 5xx', async () => {
    const cases: Array<[SpyProbe['answers']['pi'], RegExp]> = [
      [() => Promise.reject(new Error('runner exploded')), /probe failed: runner exploded/],
      [() => new Promise(() => {}), /did not answer within 20 ms/],
      [() => Promise.resolve({ available: 'yes' } as never), /malformed report/],
    ];
    for (const [answer, pattern] of cases) {
      const { app, token } = await setup(new SpyProbe({ pi: answer }), { probeTimeoutMs: 20 });
      const err = expectError(
        await call(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: 'pi' } }),
        400,
        'backend_unavailable',
      );
      expect(err.message).toMatch(pattern);
    }
  });

  it('PROBE_TIMEOUT_SECONDS overrides the app default (production probes are slow Fargate tasks)', async () => {
    const slowPi = () => new Promise<{ available: boolean }>(() => {});
    const { app, token } = await setup(new SpyProbe({ pi: slowPi }), { probeTimeoutMs: 60_000 });
    const err = expectError(
      await call(app, 'PUT', '/api/admin/settings', {
        token,
        body: { llmBackend: 'pi' },
        env: { PROBE_TIMEOUT_SECONDS: '0.02' },
      }),
      400,
      'backend_unavailable',
    );
    expect(err.message).toMatch(/did not answer within 20 ms/);
  });

  it('to claude: never probes, even when a probe would call claude unusable', async () => {
    const probe = new SpyProbe({
      claude: () => Promise.reject(new Error('must not be called')),
      pi: { available: true },
    });
    const { app, token } = await setup(probe);
    await env.DB.prepare('UPDATE settings SET value = ?')
      .bind(JSON.stringify({ llmBackend: 'pi' }))
      .run();
    const r = await call<Settings>(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: 'claude' } });
    expect(r.status).toBe(200);
    expect(r.body.llmBackend).toBe('claude');
    expect(probe.calls).toEqual([]);
    expect(await settingsAudit()).toMatchObject([{ before: { llmBackend: 'pi' }, after: { llmBackend: 'claude' } }]);
  });

  it('to pi while already on pi: not a switch, no probe', async () => {
    const probe = new SpyProbe({ pi: unusable });
    const { app, token } = await setup(probe);
    await env.DB.prepare('UPDATE settings SET value = ?')
      .bind(JSON.stringify({ llmBackend: 'pi' }))
      .run();
    const r = await call(app, 'PUT', '/api/admin/settings', {
      token,
      body: { llmBackend: 'pi', sessionIdleMinutes: 45 },
    });
    expect(r.status).toBe(200);
    expect(probe.calls).toEqual([]);
  });

  it('answers 409 when another admin changed settings while the probe ran, and keeps their change', async () => {
    const probe = new SpyProbe({
      pi: async () => {
        // Another admin's write lands between our read and our write.
        await env.DB.prepare('UPDATE settings SET value = \'{"sessionIdleMinutes":99}\', version = version + 1').run();
        return { available: true };
      },
    });
    const { app, token } = await setup(probe);
    expectError(await call(app, 'PUT', '/api/admin/settings', { token, body: { llmBackend: 'pi' } }), 409, 'conflict');
    const now = (await call<Settings>(app, 'GET', '/api/admin/settings', { token })).body;
    expect(now.llmBackend).toBe('claude');
    expect(now.sessionIdleMinutes).toBe(99);
    expect(await settingsAudit()).toEqual([]);
  });
});
