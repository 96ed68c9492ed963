import { createRoute, z } from '@hono/zod-openapi';
import { authenticate } from '../auth/middleware.ts';
import { requireCurrentPassword } from '../auth/current-password.ts';
import {
  findLiveApiToken,
  issueTokenStatement,
  listLiveApiTokens,
  revokeOwnApiTokenStatement,
  type TokenRow,
} from '../auth/token-store.ts';
import { auditInsert } from '../audit/store.ts';
import { DAY_MS } from '../auth/tokens.ts';
import { iso } from '../clock.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { newRouter, type AppDeps } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import {
  CreatedTokenSchema,
  CreateTokenSchema,
  MAX_LIVE_API_TOKENS,
  TokenIdParamSchema,
  TokenInfoSchema,
  type TokenInfo,
} from './schemas.ts';

const security = AUTHENTICATED;

function toInfo(row: TokenRow): TokenInfo {
  return {
    id: row.id,
    name: row.name ?? '',
    createdAt: iso(row.created_at),
    expiresAt: iso(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : iso(row.last_used_at),
  };
}

const createTokenRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['tokens'],
  summary: 'Create a personal API token (the secret is shown once); needs a login session and the current password',
  security,
  request: { body: { required: true, content: jsonContent(CreateTokenSchema) } },
  responses: {
    201: { description: 'created', content: jsonContent(CreatedTokenSchema) },
    ...errorResponses(400, 401, 403, 409, 413, 415, 429),
  },
});

const listTokensRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['tokens'],
  summary: "The caller's live API tokens (never their secrets)",
  security,
  responses: {
    200: { description: 'tokens', content: jsonContent(z.object({ tokens: z.array(TokenInfoSchema) })) },
    ...errorResponses(401),
  },
});

const getTokenRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['tokens'],
  summary: 'One of the caller’s live API tokens',
  security,
  request: { params: TokenIdParamSchema },
  responses: {
    200: { description: 'token', content: jsonContent(TokenInfoSchema) },
    ...errorResponses(400, 401, 404),
  },
});

const revokeTokenRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['tokens'],
  summary: 'Revoke one of the caller’s API tokens; effective on the next request',
  security,
  request: { params: TokenIdParamSchema },
  responses: { 204: { description: 'revoked' }, ...errorResponses(400, 401, 403, 404) },
});

export function tokenRoutes(deps: AppDeps) {
  const app = newRouter();
  app.use('*', authenticate(deps));

  app.openapi(createTokenRoute, async (c) => {
    const { name, expiresInDays, currentPassword } = c.req.valid('json');
    const { user } = c.get('auth');
    const checked = await requireCurrentPassword(c, deps, currentPassword, 'creating an API token');
    if ('refused' in checked) {
      const { refused } = checked;
      return apiError(c, refused.status, refused.code, refused.message, refused.field);
    }
    const now = deps.clock();
    const db = c.env.DB;
    const live = await listLiveApiTokens(db, user.id, now);
    if (live.some((t) => t.name === name)) {
      return apiError(
        c,
        409,
        'token_name_taken',
        `name: you already have a live token named ${JSON.stringify(name)}`,
        'name',
      );
    }
    if (live.length >= MAX_LIVE_API_TOKENS) {
      return apiError(c, 409, 'token_limit', `you already have ${MAX_LIVE_API_TOKENS} live tokens; revoke one first`);
    }
    const issued = await issueTokenStatement(db, {
      userId: user.id,
      kind: 'api',
      name,
      now,
      ttlMs: expiresInDays * DAY_MS,
      passwordHash: checked.passwordHash,
    });
    const audit = auditInsert(
      db,
      {
        at: now,
        actor: user,
        action: 'token.create',
        target: `token:${issued.row.id}`,
        before: null,
        after: { name, expiresAt: iso(issued.row.expires_at) },
      },
      { onlyIfPreviousChanged: true },
    );
    const [inserted] = await db.batch([issued.statement, audit.statement]);
    // The password was reset, or the account disabled, since the current password was checked.
    if ((inserted?.meta.changes ?? 0) === 0)
      return apiError(c, 401, 'unauthenticated', 'the account changed while this request ran; sign in again');
    return c.json({ token: toInfo(issued.row), secret: issued.secret }, 201);
  });

  app.openapi(listTokensRoute, async (c) => {
    const rows = await listLiveApiTokens(c.env.DB, c.get('auth').user.id, deps.clock());
    return c.json({ tokens: rows.map(toInfo) }, 200);
  });

  app.openapi(getTokenRoute, async (c) => {
    const { id } = c.req.valid('param');
    const row = await findLiveApiToken(c.env.DB, c.get('auth').user.id, id, deps.clock());
    if (row === null) return apiError(c, 404, 'not_found', 'no such token');
    return c.json(toInfo(row), 200);
  });

  app.openapi(revokeTokenRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { user } = c.get('auth');
    const db = c.env.DB;
    const now = deps.clock();
    const row = await findLiveApiToken(db, user.id, id, now);
    if (row === null) return apiError(c, 404, 'not_found', 'no such token');
    const audit = auditInsert(
      db,
      { at: now, actor: user, action: 'token.revoke', target: `token:${id}`, before: { name: row.name }, after: null },
      { onlyIfPreviousChanged: true },
    );
    const [revoked] = await db.batch([revokeOwnApiTokenStatement(db, user.id, id, now), audit.statement]);
    if ((revoked?.meta.changes ?? 0) === 0) return apiError(c, 404, 'not_found', 'no such token');
    return c.body(null, 204);
  });

  return app;
}
