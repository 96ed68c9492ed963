import { createRoute, z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { authenticate } from '../auth/middleware.ts';
import { liveTokenRole } from '../auth/token-store.ts';
import { iso } from '../clock.ts';
import { type AppDeps, newRouter } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import type { HubRefusal, HubSnapshot, LaunchInput } from '../hub/types.ts';
import { newId, ULID_PATTERN } from '../ids.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { readSettings } from '../settings/store.ts';
import { hit, type RateRule } from '../rate-limit.ts';
import { limitBody } from '../request-body.ts';
import { invalidInput } from '../validation.ts';
import { workspaceFileRoutes } from '../workspace/file-routes.ts';
import { documentWorkspaceRoutes } from '../workspace/openapi.ts';
import {
  CreateSessionSchema,
  EventsQuerySchema,
  ListSessionsQuerySchema,
  MessageAcceptedSchema,
  PostMessageSchema,
  RenameSessionSchema,
  SessionDetailSchema,
  SessionIdParamSchema,
  SessionPageSchema,
  SessionSchema,
  SessionTranscriptSchema,
  StartRunnerSchema,
  TranscriptQuerySchema,
} from './schemas.ts';
import {
  checkRepositoryHost,
  MESSAGE_HOPS_HEADER,
  type ApprovalMode,
  type MessageHops,
  type Repository,
} from '@switchyard/protocol';
import { approvalRoutes } from './approval-routes.ts';
import { heartbeatMs, SSE_HEADERS, sseFromViewer } from './sse.ts';
import { hubFor, readSessionEarly, type SessionsEnv, sessionAccess } from './access.ts';
import { repositoryAllowLoopback } from './repository-policy.ts';
import { runnerHubUrl } from '../runner-link/hub-url.ts';
import {
  deleteSession,
  findSession,
  insertSession,
  listUserSessions,
  renameSession,
  toSession,
  type SessionRow,
} from './store.ts';

const security = AUTHENTICATED;
const tags = ['sessions'];

/** Bodies of POST /api/sessions and PATCH /api/sessions/:id; messages are limited by settings.maxMessageBytes instead. */
const CREATE_BODY_LIMIT = 64 * 1024;
const INITIAL_REASON = 'no runner yet; the first message starts one';
const RUNNER_LIMIT_RETRY_SECONDS = 30;
/** Each session is a Durable Object and a D1 row; runners are capped separately (settings). */
export const CREATE_SESSION_RULE: RateRule = { max: 60, windowMs: 10 * 60_000 };

/** The hub's refusal as the API's error value (typed loosely: its statuses vary by route). */
function hubError(c: Context, r: HubRefusal): never {
  // A runner cap frees up when another session stops; there is no exact moment to promise.
  if (r.status === 429) c.header('Retry-After', String(RUNNER_LIMIT_RETRY_SECONDS));
  return apiError(c, r.status, r.code, r.message, r.field) as never;
}

function detail(row: SessionRow, snap: HubSnapshot) {
  return {
    ...toSession(row),
    state: snap.state,
    stateReason: snap.stateReason,
    turn: snap.turn,
    runner:
      snap.runner === null
        ? null
        : {
            launchId: snap.runner.launchId,
            ref: snap.runner.ref,
            runnerId: snap.runner.runnerId,
            connected: snap.runner.connected,
            startedAt: iso(snap.runner.startedAt),
          },
    lastEventId: snap.lastEventId,
  };
}

/** A launch from this request starts with the settings current now. */
async function launchInput(c: Context<SessionsEnv>): Promise<LaunchInput> {
  const row = c.get('session');
  const { settings } = c.get('settings') ?? (await readSettings(c.env.DB));
  return {
    hubUrl: runnerHubUrl(c.env, c.req.url),
    limits: {
      idleMs: settings.sessionIdleMinutes * 60_000,
      unusedIdleMs: settings.unusedRunnerIdleMinutes * 60_000,
      maxLifetimeMs: settings.sessionMaxMinutes * 60_000,
    },
    model: settings.defaultModel[row.backend],
    runnerCaps: { perUser: settings.maxLiveRunnersPerUser, total: settings.maxLiveRunners },
    approvals: { policy: settings.approvalPolicy, timeoutMs: settings.approvalTimeoutSeconds * 1000 },
  };
}

/**
 * settings.maxMessageBytes, enforced while the body streams in (before it is parsed). The settings
 * the session check read alongside the token: a second read is a second round trip to D1 on every
 * message's way to the runner.
 */
const messageSizeLimit: MiddlewareHandler<SessionsEnv> = async (c, next) => {
  const { settings } = c.get('settings') ?? (await readSettings(c.env.DB));
  const max = settings.maxMessageBytes;
  return limitBody(max, (cc) =>
    apiError(cc, 413, 'payload_too_large', `message body exceeds maxMessageBytes (${max} bytes)`),
  )(c, next);
};

const createRoute_ = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Create a session; its backend is pinned from settings now',
  security,
  request: { body: { required: false, content: jsonContent(CreateSessionSchema) } },
  responses: {
    201: { description: 'created', content: jsonContent(SessionSchema) },
    ...errorResponses(400, 401, 403, 413, 415, 429),
  },
});

const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags,
  summary: "The caller's sessions, newest first",
  security,
  request: { query: ListSessionsQuerySchema },
  responses: { 200: { description: 'one page', content: jsonContent(SessionPageSchema) }, ...errorResponses(400, 401) },
});

const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'One session with its live state (owner or admin)',
  security,
  request: { params: SessionIdParamSchema },
  responses: {
    200: { description: 'session', content: jsonContent(SessionDetailSchema) },
    ...errorResponses(401, 404),
  },
});

const renameRoute = createRoute({
  method: 'patch',
  path: '/{id}',
  tags,
  summary: 'Rename the session (owner)',
  security,
  request: { params: SessionIdParamSchema, body: { required: true, content: jsonContent(RenameSessionSchema) } },
  responses: {
    200: { description: 'the renamed session', content: jsonContent(SessionSchema) },
    ...errorResponses(400, 401, 403, 404),
  },
});

const deleteRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Stop the runner and delete the session, its events and transcript (owner or admin)',
  security,
  request: { params: SessionIdParamSchema },
  responses: { 204: { description: 'deleted' }, ...errorResponses(401, 403, 404) },
});

const messageRoute = createRoute({
  method: 'post',
  path: '/{id}/messages',
  tags,
  summary: 'Send a message (owner); the answer streams on /events',
  security,
  request: { params: SessionIdParamSchema, body: { required: true, content: jsonContent(PostMessageSchema) } },
  responses: {
    202: { description: 'accepted; a runner starts if none is running', content: jsonContent(MessageAcceptedSchema) },
    ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429),
  },
});

const startRoute = createRoute({
  method: 'post',
  path: '/{id}/start',
  tags,
  summary:
    "Start the session's runner now, ahead of its first message (owner), so its start overlaps the typing; does nothing when one is running or starting",
  security,
  request: { params: SessionIdParamSchema },
  responses: {
    202: { description: 'a runner is starting', content: jsonContent(StartRunnerSchema) },
    200: { description: 'a runner was already running or starting', content: jsonContent(StartRunnerSchema) },
    ...errorResponses(401, 403, 404, 409, 429),
  },
});

const interruptRoute = createRoute({
  method: 'post',
  path: '/{id}/interrupt',
  tags,
  summary: 'Interrupt the running turn (owner); it ends with turn.done interrupted',
  security,
  request: { params: SessionIdParamSchema },
  responses: {
    202: { description: 'interrupt sent', content: jsonContent(z.object({ accepted: z.literal(true) })) },
    ...errorResponses(401, 403, 404, 409),
  },
});

const eventsRoute = createRoute({
  method: 'get',
  path: '/{id}/events',
  tags,
  summary: 'Server-sent events: `id:` ULID, `event:` type, `data:` JSON; Last-Event-ID or ?after= replays',
  security,
  request: {
    params: SessionIdParamSchema,
    query: EventsQuerySchema,
    headers: z.object({
      'last-event-id': z.string().optional().openapi({ description: 'the last id the client has; wins over ?after=' }),
    }),
  },
  responses: {
    200: { description: 'event stream', content: { 'text/event-stream': { schema: z.string() } } },
    ...errorResponses(400, 401, 404),
  },
});

const transcriptRoute = createRoute({
  method: 'get',
  path: '/{id}/transcript',
  tags,
  summary: 'The conversation as normalized messages (owner or admin), paged by event id',
  security,
  request: { params: SessionIdParamSchema, query: TranscriptQuerySchema },
  responses: {
    200: { description: 'transcript', content: jsonContent(SessionTranscriptSchema) },
    ...errorResponses(400, 401, 404),
  },
});

export function sessionRoutes(deps: AppDeps) {
  const app = newRouter<SessionsEnv>();
  // Bench only: the message's way in starts here (protocol's bench-hops.ts); a clock read, unused unless the hub has BENCH_HOPS on.
  app.use('/:id/messages', async (c, next) => {
    c.set('arrivedAt', Date.now());
    await next();
  });
  app.use('/:id/messages', readSessionEarly(deps, { withSettings: true }));
  app.use('/:id/start', readSessionEarly(deps, { withSettings: true }));
  app.use('/:id/events', readSessionEarly(deps));
  app.use('/:id', readSessionEarly(deps));
  app.use('*', authenticate<SessionsEnv>(deps));
  const smallBody = limitBody(CREATE_BODY_LIMIT, (c) =>
    apiError(c, 413, 'payload_too_large', `request body exceeds ${CREATE_BODY_LIMIT} bytes`),
  );
  app.on('POST', '/', smallBody);
  app.on('PATCH', '/:id', smallBody);
  app.use('/:id/messages', sessionAccess(deps, 'owner', { withSettings: true }), messageSizeLimit);
  app.use('/:id/start', sessionAccess(deps, 'owner', { withSettings: true }));
  app.use('/:id/interrupt', sessionAccess(deps, 'owner'));
  app.use('/:id/approvals/*', sessionAccess(deps, 'owner'));
  app.on('POST', '/:id/approvals/*', smallBody);
  app.use('/:id/events', sessionAccess(deps, 'read'));
  app.use('/:id/transcript', sessionAccess(deps, 'read'));
  app.use('/:id', sessionAccess(deps, 'read'));
  app.route('/', workspaceFileRoutes(deps));
  documentWorkspaceRoutes(app.openAPIRegistry);

  app.openapi(createRoute_, async (c) => {
    // An absent or empty body is `{}`: POST /api/sessions with nothing is a valid request.
    let title: string | null = null;
    let approvals: ApprovalMode | undefined;
    let repository: Repository | null = null;
    const raw = await c.req.text();
    if (raw.trim() !== '') {
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        return apiError(c, 400, 'invalid_json', 'request body is not valid JSON');
      }
      const parsed = CreateSessionSchema.safeParse(body);
      if (!parsed.success) return invalidInput(c, parsed.error);
      title = parsed.data.title ?? null;
      approvals = parsed.data.approvals;
      repository = parsed.data.repository ?? null;
    }
    const { user } = c.get('auth');
    const now = deps.clock();
    const rate = await hit(c.env.DB, `create-session:${user.id}`, CREATE_SESSION_RULE, now);
    if (!rate.ok) {
      c.header('Retry-After', String(rate.retryAfterSeconds));
      return apiError(
        c,
        429,
        'rate_limited',
        `at most ${CREATE_SESSION_RULE.max} new sessions per ${CREATE_SESSION_RULE.windowMs / 60_000} min; try again later`,
      );
    }
    const { settings } = await readSettings(c.env.DB);
    if (repository !== null) {
      const verdict = checkRepositoryHost(repository.url, {
        hosts: settings.repositoryHosts,
        allowLoopback: repositoryAllowLoopback(c.env),
      });
      if (!verdict.ok) return apiError(c, 400, 'invalid_request', verdict.message, 'repository.url');
    }
    const id = newId(now);
    const backend = settings.llmBackend;
    approvals ??= settings.defaultApprovals;
    // The hub first: a D1 row whose hub was never told about it would answer 404s.
    await hubFor(c.env, id).create({
      id,
      userId: user.id,
      backend,
      title,
      createdAt: now,
      approvals,
      ...(repository !== null && { repository }),
    });
    await insertSession(c.env.DB, {
      id,
      userId: user.id,
      backend,
      title,
      state: 'stopped',
      reason: INITIAL_REASON,
      now,
      approvals,
      repository,
    });
    const row = await findSession(c.env.DB, id);
    if (row === null) return apiError(c, 500, 'internal', 'session vanished after creation') as never;
    return c.json(toSession(row), 201);
  });

  app.openapi(listRoute, async (c) => {
    const q = c.req.valid('query');
    const { rows, nextCursor } = await listUserSessions(c.env.DB, c.get('auth').user.id, q);
    return c.json({ sessions: rows.map(toSession), nextCursor }, 200);
  });

  app.openapi(getRoute, async (c) => {
    const row = c.get('session');
    const snap = await hubFor(c.env, row.id).snapshot();
    if (!snap.ok) return hubError(c, snap);
    return c.json(detail(row, snap.value), 200);
  });

  app.openapi(renameRoute, async (c) => {
    const row = c.get('session');
    if (row.user_id !== c.get('auth').user.id)
      return apiError(c, 403, 'forbidden', "only the session's owner can do this");
    await renameSession(c.env.DB, row.id, c.req.valid('json').title, deps.clock());
    const renamed = await findSession(c.env.DB, row.id);
    if (renamed === null) return apiError(c, 404, 'not_found', 'no such session');
    return c.json(toSession(renamed), 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const row = c.get('session');
    await hubFor(c.env, row.id).destroy();
    await deleteSession(c.env.DB, row.id);
    return c.body(null, 204);
  });

  app.openapi(messageRoute, async (c) => {
    const row = c.get('session');
    const body = c.req.valid('json');
    const launch = await launchInput(c);
    const workerCall = Date.now();
    const result = await hubFor(c.env, row.id).postMessage({
      text: body.text,
      ...(body.images !== undefined && { images: body.images }),
      ...(body.clientMessageId !== undefined && { clientMessageId: body.clientMessageId }),
      ...launch,
    });
    if (!result.ok) return hubError(c, result);
    const { messageId, duplicate, hubIn } = result.value;
    const workerIn = c.get('arrivedAt');
    if (hubIn !== undefined && workerIn !== undefined) {
      c.header(MESSAGE_HOPS_HEADER, JSON.stringify({ workerIn, workerCall, hubIn } satisfies MessageHops));
    }
    return c.json({ messageId, duplicate }, 202);
  });

  app.openapi(startRoute, async (c) => {
    const result = await hubFor(c.env, c.get('session').id).startRunner(await launchInput(c));
    if (!result.ok) return hubError(c, result);
    return c.json({ started: result.value.started }, result.value.started ? 202 : 200);
  });

  app.openapi(interruptRoute, async (c) => {
    const result = await hubFor(c.env, c.get('session').id).interrupt();
    if (!result.ok) return hubError(c, result);
    return c.json({ accepted: true as const }, 202);
  });

  app.openapi(eventsRoute, async (c) => {
    const row = c.get('session');
    const header = c.req.header('Last-Event-ID');
    if (header !== undefined && header !== '' && !ULID_PATTERN.test(header)) {
      return apiError(c, 400, 'invalid_request', 'Last-Event-ID: must be an event id', 'Last-Event-ID');
    }
    const query = c.req.valid('query');
    const after = header !== undefined && header !== '' ? header : (query.after ?? null);
    const viewer = new URLSearchParams({ name: c.get('auth').user.username, ...(after !== null && { after }) });
    const res = await hubFor(c.env, row.id).fetch(`https://hub/viewer?${viewer}`, {
      headers: { Upgrade: 'websocket' },
    });
    const ws = res.webSocket;
    if (ws === null) return apiError(c, 404, 'not_found', 'no such session');
    const { tokenId, user } = c.get('auth');
    const db = c.env.DB;
    const stream = sseFromViewer(ws, {
      after,
      presence: query.presence === '1',
      heartbeatMs: heartbeatMs(c.env),
      signal: c.req.raw.signal,
      stillAllowed: async () => {
        const role = await liveTokenRole(db, tokenId, deps.clock());
        return role !== null && (row.user_id === user.id || role === 'admin');
      },
    });
    return c.body(stream, 200, SSE_HEADERS);
  });

  approvalRoutes(app, deps);

  app.openapi(transcriptRoute, async (c) => {
    const row = c.get('session');
    const q = c.req.valid('query');
    const result = await hubFor(c.env, row.id).transcript({ after: q.after ?? null, limit: q.limit });
    if (!result.ok) return hubError(c, result);
    return c.json({ sessionId: row.id, backend: row.backend, ...result.value }, 200);
  });

  return app;
}
