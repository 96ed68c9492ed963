import { createRoute } from '@hono/zod-openapi';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { newRouter } from '../context.ts';
import { errorResponses } from '../errors.ts';
import { AuditPageSchema, AuditQuerySchema } from './schemas.ts';
import { listAudit } from './store.ts';

const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['admin'],
  summary: 'The audit trail, newest first; page with `cursor`',
  security: AUTHENTICATED,
  request: { query: AuditQuerySchema },
  responses: {
    200: { description: 'one page', content: jsonContent(AuditPageSchema) },
    ...errorResponses(400, 401, 403),
  },
});

/** Mounted under the admin router, which has already authenticated and checked the role. */
export function auditRoutes() {
  const app = newRouter();
  app.openapi(listRoute, async (c) => c.json(await listAudit(c.env.DB, c.req.valid('query')), 200));
  return app;
}
