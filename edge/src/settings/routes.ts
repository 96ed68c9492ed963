import { createRoute, z } from '@hono/zod-openapi';
import { BackendSchema } from '@switchyard/protocol';
import { authenticate } from '../auth/middleware.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { newRouter, type AppDeps } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import { startProbe, storedStatuses } from './backend-status.ts';
import { inBackground } from '../background.ts';
import { iso } from '../clock.ts';
import { newId } from '../ids.ts';
import { poolCoordinator } from '../pool/config.ts';
import { applyPatch, diffSettings, SettingsPatchSchema, SettingsSchema } from './schema.ts';
import { readSettings, writeSettings } from './store.ts';

const security = AUTHENTICATED;

export const PublicSettingsSchema = z
  .object({
    llmBackend: BackendSchema,
    backends: z.array(
      z.object({
        name: BackendSchema,
        available: z.boolean(),
        version: z.string().optional(),
        reason: z.string().optional(),
        fix: z.string().optional().openapi({ description: 'how to make it usable; shown to admins only' }),
        checkedAt: z
          .string()
          .nullable()
          .openapi({ format: 'date-time', description: 'when this answer was probed; null before the first probe' }),
      }),
    ),
    maxMessageBytes: z
      .number()
      .int()
      .openapi({ description: 'largest accepted message body; clients check before uploading' }),
    maxFileBytes: z.number().int().openapi({
      description: 'largest accepted workspace file (settings.workspaceMaxFileBytes); clients check before uploading',
    }),
  })
  .openapi('PublicSettings');

const publicRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['settings'],
  summary:
    'The backend new sessions use, and the last stored probe answer per backend (an admin reading a stale answer starts one background probe)',
  security,
  responses: { 200: { description: 'settings', content: jsonContent(PublicSettingsSchema) }, ...errorResponses(401) },
});

const adminGetRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['admin'],
  summary: 'All settings',
  security,
  responses: { 200: { description: 'settings', content: jsonContent(SettingsSchema) }, ...errorResponses(401, 403) },
});

const adminPutRoute = createRoute({
  method: 'put',
  path: '/',
  tags: ['admin'],
  summary: 'Change some settings. Switching llmBackend to pi probes pi first; switching to claude never probes.',
  security,
  request: { body: { required: true, content: jsonContent(SettingsPatchSchema) } },
  responses: {
    200: { description: 'the settings after the change', content: jsonContent(SettingsSchema) },
    ...errorResponses(400, 401, 403, 409, 413, 415),
  },
});

function probeTimeoutMs(deps: AppDeps, env: Env): number {
  const seconds = Number(env.PROBE_TIMEOUT_SECONDS);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : deps.probeTimeoutMs;
}

export function publicSettingsRoutes(deps: AppDeps) {
  const app = newRouter();
  app.use('*', authenticate(deps));
  app.openapi(publicRoute, async (c) => {
    const db = c.env.DB;
    const { settings } = await readSettings(db);
    const statuses = await storedStatuses(db);
    const admin = c.get('auth').user.role === 'admin';
    // Only an admin's read refreshes, in the background and one probe per backend at a time: a
    // probe can be a Fargate task, so a crowd of readers must not be able to start a crowd of them.
    if (admin) {
      const now = deps.clock();
      for (const s of statuses) {
        if (s.checkedAt !== null && now - s.checkedAt < deps.probeCacheTtlMs) continue;
        const flight = await startProbe(db, deps.probeFor(c.env), s.name, {
          now,
          timeoutMs: probeTimeoutMs(deps, c.env),
          leaseId: newId(now),
        });
        if (flight !== null) inBackground(c, flight.done);
      }
    }
    // Users see availability and the reason; the operator's fix is for admins.
    const backends = statuses.map(({ name, available, version, reason, fix, checkedAt }) => ({
      name,
      available,
      ...(version === undefined ? {} : { version }),
      ...(reason === undefined ? {} : { reason }),
      ...(fix === undefined || !admin ? {} : { fix }),
      checkedAt: checkedAt === null ? null : iso(checkedAt),
    }));
    return c.json(
      {
        llmBackend: settings.llmBackend,
        backends,
        maxMessageBytes: settings.maxMessageBytes,
        maxFileBytes: settings.workspaceMaxFileBytes,
      },
      200,
    );
  });
  return app;
}

/** Mounted under the admin router, which has already authenticated and checked the role. */
export function adminSettingsRoutes(deps: AppDeps) {
  const app = newRouter();

  app.openapi(adminGetRoute, async (c) => c.json((await readSettings(c.env.DB)).settings, 200));

  app.openapi(adminPutRoute, async (c) => {
    const patch = c.req.valid('json');
    const db = c.env.DB;
    const current = await readSettings(db);
    const next = applyPatch(current.settings, patch);
    const valid = SettingsSchema.safeParse(next);
    if (!valid.success) {
      const issue = valid.error.issues[0];
      const field = issue?.path.map(String).join('.') ?? '';
      return apiError(c, 400, 'invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, field || undefined);
    }

    // Only a switch *to* pi needs proof; claude is the escape hatch and is never probed.
    if (next.llmBackend === 'pi' && current.settings.llmBackend !== 'pi') {
      const now = deps.clock();
      const flight = await startProbe(db, deps.probeFor(c.env), 'pi', {
        now,
        timeoutMs: probeTimeoutMs(deps, c.env),
        leaseId: newId(now),
      });
      if (flight === null) {
        return apiError(
          c,
          409,
          'conflict',
          'llmBackend: a pi probe is already running; retry when it has finished',
          'llmBackend',
        );
      }
      const result = await flight.done;
      if (!result.available) {
        const reason = result.reason ?? 'the probe gave no reason';
        const fix = result.fix === undefined ? '' : ` To fix: ${result.fix}`;
        return apiError(c, 400, 'backend_unavailable', `llmBackend: pi is not usable: ${reason}.${fix}`, 'llmBackend');
      }
    }

    const { before, after } = diffSettings(current.settings, next);
    if (Object.keys(after).length === 0) return c.json(current.settings, 200);
    const written = await writeSettings(db, {
      next,
      version: current.version,
      now: deps.clock(),
      actor: c.get('auth').user,
      before,
      after,
    });
    if (!written)
      return apiError(c, 409, 'conflict', 'settings changed while this request ran; read them again and retry');
    // A backend switch drains the old backend's pool; a new default model or limits replace pooled runners.
    inBackground(c, poolCoordinator(c.env).poke(null));
    return c.json(next, 200);
  });

  return app;
}
