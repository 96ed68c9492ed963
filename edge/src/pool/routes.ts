import { createRoute, z } from '@hono/zod-openapi';
import { BackendSchema, bearerToken, RUNNER_PROOF_HEADER } from '@switchyard/protocol';
import { PoolCloseCode, PoolSizesSchema, type PoolSizes } from '@switchyard/protocol/pool';
import type { Context } from 'hono';
import { auditInsert } from '../audit/store.ts';
import { newRouter, type AppDeps, type AppEnv } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { runnerHubUrl } from '../runner-link/hub-url.ts';
import { MIN_SECRET_LENGTH, verifyRunnerToken } from '../runner-link/token.ts';
import { POOL_TOKEN_SCOPE, poolCoordinator, poolUrlFrom } from './config.ts';

// The warm runner pool's HTTP surface (docs/DESIGN.md "Warm runner pool"): the admin setting
// (GET/PUT /api/admin/runner-pool, behind the admin gate) and the pooled runners' front door
// (GET /internal/runner/pool, a WebSocket upgrade with a pool token).

const PooledRunnerSchema = z.object({
  id: z.string(),
  backend: z.enum(BackendSchema.options),
  model: z.string().nullable(),
  ref: z.string().nullable().openapi({ description: 'the launcher’s task reference; null while it starts' }),
  launchedAt: z.number().int(),
  state: z.enum(['launching', 'idle']),
});

const PoolStatusSchema = z
  .object({
    sizes: PoolSizesSchema.openapi({ description: 'idle pooled runners kept per backend; 0 = no pool (default)' }),
    runners: z.array(PooledRunnerSchema),
  })
  .openapi('RunnerPool');

const PoolPatchSchema = z
  .strictObject({
    claude: PoolSizesSchema.shape.claude.optional(),
    pi: PoolSizesSchema.shape.pi.optional(),
  })
  .refine((p) => Object.keys(p).length > 0, { message: 'give claude, pi or both' })
  .openapi('RunnerPoolPatch');

const getRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['admin'],
  summary: 'The warm runner pool: its size per backend and the pooled runners',
  security: AUTHENTICATED,
  responses: {
    200: { description: 'the pool', content: jsonContent(PoolStatusSchema) },
    ...errorResponses(401, 403),
  },
});

const putRoute = createRoute({
  method: 'put',
  path: '/',
  tags: ['admin'],
  summary:
    'Set how many idle runners are kept per backend (only the backend new sessions use keeps a pool; 0 drains it)',
  security: AUTHENTICATED,
  request: { body: { required: true, content: jsonContent(PoolPatchSchema) } },
  responses: {
    200: { description: 'the pool after the change', content: jsonContent(PoolStatusSchema) },
    ...errorResponses(400, 401, 403, 413, 415),
  },
});

/** The sizes that changed, before and after: what the audit entry records (pure). */
export function poolSizeChange(
  before: PoolSizes,
  after: PoolSizes,
): { before: Partial<PoolSizes>; after: Partial<PoolSizes> } {
  const changed = BackendSchema.options.filter((b) => before[b] !== after[b]);
  return {
    before: Object.fromEntries(changed.map((b) => [b, before[b]])),
    after: Object.fromEntries(changed.map((b) => [b, after[b]])),
  };
}

/** Mounted under the admin gate (admin.ts): authentication and the admin check are already done. */
export function poolAdminRoutes(deps: AppDeps) {
  const app = newRouter();
  app.openapi(getRoute, async (c) => c.json(await poolCoordinator(c.env).status(), 200));
  app.openapi(putRoute, async (c) => {
    const patch = c.req.valid('json');
    const poolUrl = poolUrlFrom(runnerHubUrl(c.env, c.req.url));
    const { before, status } = await poolCoordinator(c.env).setSizes(patch, poolUrl);
    const change = poolSizeChange(before, status.sizes);
    // The sizes live in the coordinator, not in D1, so the entry cannot share the change's batch:
    // it is written once the coordinator has taken the change, and only if a size changed.
    if (Object.keys(change.after).length > 0) {
      const now = deps.clock();
      await auditInsert(
        c.env.DB,
        { at: now, actor: c.get('auth').user, action: 'pool.update', target: 'runner-pool', ...change },
        { onlyIfPreviousChanged: false },
      ).statement.run();
    }
    return c.json(status, 200);
  });
  return app;
}

function refuse(code: number, reason: string): Response {
  const pair = new WebSocketPair();
  const server = pair[1];
  server.accept();
  server.close(code, reason);
  return new Response(null, { status: 101, webSocket: pair[0] });
}

/** GET /internal/runner/pool: a pooled runner's link; the token is checked before the coordinator wakes. */
export async function poolConnect(c: Context<AppEnv>, deps: AppDeps): Promise<Response> {
  if (c.req.header('Upgrade')?.toLowerCase() !== 'websocket')
    return apiError(c, 400, 'invalid_request', 'this endpoint takes a WebSocket upgrade');
  const secret = c.env.RUNNER_TOKEN_SECRET ?? '';
  if (secret.length < MIN_SECRET_LENGTH) return refuse(PoolCloseCode.unauthorized, 'runner links are not configured');
  const token = bearerToken(c.req.header('Authorization'));
  if (token === undefined) return refuse(PoolCloseCode.unauthorized, 'a pool token is required');
  const verdict = await verifyRunnerToken(secret, token, deps.clock());
  if (!verdict.ok || verdict.claims.sessionId !== POOL_TOKEN_SCOPE || verdict.claims.kind !== 'bootstrap')
    return refuse(PoolCloseCode.unauthorized, 'pool token invalid or expired');
  const proof = c.req.header(RUNNER_PROOF_HEADER);
  return poolCoordinator(c.env).fetch('https://pool/runner', {
    headers: {
      Upgrade: 'websocket',
      'X-Switchyard-Pool-Runner': verdict.claims.launchId,
      ...(proof !== undefined && { [RUNNER_PROOF_HEADER]: proof }),
    },
  });
}
