import { createRoute } from '@hono/zod-openapi';
import { newRouter } from '../context.ts';
import { errorResponses } from '../errors.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { AdminSessionPageSchema, AdminSessionsQuerySchema } from './schemas.ts';
import { listAllSessions, toSession } from './store.ts';

const adminListRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['admin'],
  summary: 'Sessions of every user with their runners; `state=live` (default) or `all`',
  security: AUTHENTICATED,
  request: { query: AdminSessionsQuerySchema },
  responses: {
    200: { description: 'one page', content: jsonContent(AdminSessionPageSchema) },
    ...errorResponses(400, 401, 403),
  },
});

/** Mounted under the admin router (already authenticated and admin-gated). */
export function adminSessionRoutes() {
  const app = newRouter();
  app.openapi(adminListRoute, async (c) => {
    const q = c.req.valid('query');
    const { rows, nextCursor } = await listAllSessions(c.env.DB, {
      live: q.state === 'live',
      limit: q.limit,
      cursor: q.cursor,
    });
    return c.json(
      {
        sessions: rows.map((r) => ({
          ...toSession(r),
          owner: { id: r.user_id, username: r.username },
          runnerRef: r.runner_ref,
        })),
        nextCursor,
      },
      200,
    );
  });
  return app;
}
