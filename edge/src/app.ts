import { createRoute, z } from '@hono/zod-openapi';
import { RUNNER_CONNECT_PATH, RUNNER_WORKSPACE_PATH } from '@switchyard/protocol';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import { adminRoutes } from './admin.ts';
import { verifyPassword } from './auth/password.ts';
import { authRoutes } from './auth/routes.ts';
import { systemClock } from './clock.ts';
import { newRouter, type AppDeps } from './context.ts';
import { apiError, errorBody, httpExceptionBody } from './errors.ts';
import { jsonContent, serveOpenApi } from './openapi.ts';
import { unwiredProbe } from './settings/backend-probe.ts';
import { runnerLinkRoutes } from './runner-link/connect.ts';
import { runnerWorkspaceRoutes } from './workspace/runner-routes.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { limitBody } from './request-body.ts';
import { publicSettingsRoutes } from './settings/routes.ts';
import { tokenRoutes } from './tokens/routes.ts';

const DEFAULT_DEPS: AppDeps = {
  clock: systemClock,
  probeFor: () => unwiredProbe,
  probeTimeoutMs: 15_000,
  probeCacheTtlMs: 5 * 60_000,
  verifyPassword: (password, stored) => verifyPassword(password, stored),
};

/** Bodies of the JSON routes here are small; session messages (hub) carry their own limit. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

const jsonBodyLimit = limitBody(MAX_JSON_BODY_BYTES, (c) =>
  apiError(c, 413, 'payload_too_large', `request body exceeds ${MAX_JSON_BODY_BYTES} bytes`),
);

/** API responses are data, never a page: nothing may run, frame or sniff them. */
const apiSecurityHeaders = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  referrerPolicy: 'no-referrer',
  xFrameOptions: 'DENY',
  crossOriginResourcePolicy: 'same-origin',
});

const healthRoute = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['ops'],
  summary: 'Liveness',
  responses: {
    200: { description: 'alive', content: jsonContent(z.object({ ok: z.literal(true) })) },
  },
});

export function createApp(overrides: Partial<AppDeps> = {}) {
  const deps: AppDeps = { ...DEFAULT_DEPS, ...overrides };
  const app = newRouter();

  // The web app's assets carry the same headers from web/public/_headers. Not on the runner link:
  // a WebSocket 101 from the hub has immutable headers.
  for (const path of ['/api/*', '/healthz']) app.use(path, apiSecurityHeaders);
  app.use('/api/*', async (c, next) => {
    await next();
    // Responses carry tokens and per-user data: never let a shared cache keep them.
    c.header('Cache-Control', 'no-store');
  });
  for (const path of ['/api/auth/*', '/api/me/*', '/api/tokens/*', '/api/admin/*']) {
    app.use(path, jsonBodyLimit);
  }

  app.openapi(healthRoute, (c) => c.json({ ok: true as const }, 200));
  app.route('/api', authRoutes(deps));
  app.route('/api/tokens', tokenRoutes(deps));
  app.route('/api/settings', publicSettingsRoutes(deps));
  app.route('/api/admin', adminRoutes(deps));
  app.route('/api/sessions', sessionRoutes(deps));
  app.route(RUNNER_CONNECT_PATH.replace(/\/connect$/, ''), runnerLinkRoutes(deps));
  app.route(RUNNER_WORKSPACE_PATH, runnerWorkspaceRoutes(deps));
  serveOpenApi(app);

  app.notFound((c) => apiError(c, 404, 'not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`));
  app.onError((err, c) => {
    if (err instanceof HTTPException) {
      const { status, body } = httpExceptionBody(err);
      return c.json(body, status);
    }
    // Name and message only: request bodies (passwords) and headers (tokens) are never logged.
    console.error('unhandled error:', err instanceof Error ? `${err.name}: ${err.message}` : typeof err);
    return c.json(errorBody('internal', 'internal error'), 500);
  });
  return app;
}
