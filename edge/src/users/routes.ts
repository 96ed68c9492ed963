import { createRoute, z } from '@hono/zod-openapi';
import { requireCurrentPassword } from '../auth/current-password.ts';
import { hashPassword } from '../auth/password.ts';
import { revokeTokensStatement } from '../auth/token-store.ts';
import { auditInsert } from '../audit/store.ts';
import { hubFor } from '../sessions/access.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { newRouter, type AppDeps } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import { newId } from '../ids.ts';
import { describeGrants, grantsOf } from './grants.ts';
import { CreateUserSchema, UpdateUserSchema, UserIdParamSchema, UserSchema } from './schemas.ts';
import {
  deleteUserStatement,
  findUserById,
  findUserByUsername,
  grantingAdminStillValid,
  insertUserStatement,
  listUsers,
  toUser,
  updateUserStatement,
  type GrantingAdmin,
  type UserRow,
} from './store.ts';

const security = AUTHENTICATED;
const tags = ['admin'];

const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags,
  summary: 'All users',
  security,
  responses: {
    200: { description: 'users', content: jsonContent(z.object({ users: z.array(UserSchema) })) },
    ...errorResponses(401, 403),
  },
});

const createUserRoute = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Create a user; needs a login session and the current password',
  security,
  request: { body: { required: true, content: jsonContent(CreateUserSchema) } },
  responses: {
    201: { description: 'created', content: jsonContent(UserSchema) },
    ...errorResponses(400, 401, 403, 409, 413, 415, 429),
  },
});

const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'One user',
  security,
  request: { params: UserIdParamSchema },
  responses: { 200: { description: 'user', content: jsonContent(UserSchema) }, ...errorResponses(400, 401, 403, 404) },
});

const updateRoute = createRoute({
  method: 'patch',
  path: '/{id}',
  tags,
  summary:
    'Change role, password or disabled; a password change revokes all their tokens, disabling ends their login sessions; setting a password, making an admin or enabling needs a login session and the current password',
  security,
  request: { params: UserIdParamSchema, body: { required: true, content: jsonContent(UpdateUserSchema) } },
  responses: {
    200: { description: 'updated', content: jsonContent(UserSchema) },
    ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429),
  },
});

const deleteRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Delete a user, their tokens and their sessions (event logs and stored transcripts included)',
  security,
  request: { params: UserIdParamSchema },
  responses: { 204: { description: 'deleted' }, ...errorResponses(400, 401, 403, 404, 409) },
});

const LAST_ADMIN = 'this change would leave no active admin';
// The acting admin's password was reset, or they were demoted or disabled, after it was checked.
const CHANGED_WHILE_CHECKED = 'your account changed while this request ran; sign in again';
const DESTROY_CONCURRENCY = 8;

export function userRoutes(deps: AppDeps) {
  const app = newRouter();

  app.openapi(listRoute, async (c) => c.json({ users: (await listUsers(c.env.DB)).map(toUser) }, 200));

  app.openapi(createUserRoute, async (c) => {
    const body = c.req.valid('json');
    const db = c.env.DB;
    const checked = await requireCurrentPassword(c, deps, body.currentPassword, 'creating a user');
    if ('refused' in checked) {
      const { refused } = checked;
      return apiError(c, refused.status, refused.code, refused.message, refused.field);
    }
    const grantedBy = { id: c.get('auth').user.id, passwordHash: checked.passwordHash };
    if ((await findUserByUsername(db, body.username)) !== null) {
      return apiError(c, 409, 'username_taken', 'username: already taken', 'username');
    }
    const now = deps.clock();
    const row: UserRow = {
      id: newId(now),
      username: body.username,
      password_hash: await hashPassword(body.password),
      role: body.role,
      disabled: 0,
      created_at: now,
      updated_at: now,
    };
    const audit = auditInsert(
      db,
      {
        at: now,
        actor: c.get('auth').user,
        action: 'user.create',
        target: `user:${row.id}`,
        before: null,
        after: { username: row.username, role: row.role, disabled: false },
      },
      { onlyIfPreviousChanged: true },
    );
    let inserted: D1Result | undefined;
    try {
      [inserted] = await db.batch([insertUserStatement(db, row, grantedBy), audit.statement]);
    } catch (err) {
      // Lost a race with another create of the same name between the check and the insert.
      if (String(err).includes('UNIQUE'))
        return apiError(c, 409, 'username_taken', 'username: already taken', 'username');
      throw err;
    }
    if ((inserted?.meta.changes ?? 0) === 0) return apiError(c, 401, 'unauthenticated', CHANGED_WHILE_CHECKED);
    return c.json(toUser(row), 201);
  });

  app.openapi(getRoute, async (c) => {
    const row = await findUserById(c.env.DB, c.req.valid('param').id);
    if (row === null) return apiError(c, 404, 'not_found', 'no such user');
    return c.json(toUser(row), 200);
  });

  app.openapi(updateRoute, async (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    const db = c.env.DB;
    const current = await findUserById(db, id);
    if (current === null) return apiError(c, 404, 'not_found', 'no such user');
    const grants = grantsOf(current, patch);
    let grantedBy: GrantingAdmin | undefined;
    if (grants.length > 0) {
      const checked = await requireCurrentPassword(c, deps, patch.currentPassword, describeGrants(grants));
      if ('refused' in checked) {
        const { refused } = checked;
        return apiError(c, refused.status, refused.code, refused.message, refused.field);
      }
      grantedBy = { id: c.get('auth').user.id, passwordHash: checked.passwordHash };
    }
    const now = Math.max(deps.clock(), current.updated_at + 1);
    const next: UserRow = {
      ...current,
      role: patch.role ?? current.role,
      disabled: patch.disabled === undefined ? current.disabled : patch.disabled ? 1 : 0,
      password_hash: patch.password === undefined ? current.password_hash : await hashPassword(patch.password),
      updated_at: now,
    };

    const before: Record<string, unknown> = {};
    const after: Record<string, unknown> = {};
    if (next.role !== current.role) {
      before.role = current.role;
      after.role = next.role;
    }
    if (next.disabled !== current.disabled) {
      before.disabled = current.disabled !== 0;
      after.disabled = next.disabled !== 0;
    }
    // The audit trail records that a password changed, never any form of it.
    if (patch.password !== undefined) after.passwordChanged = true;
    if (Object.keys(after).length === 0) return c.json(toUser(current), 200);

    const audit = auditInsert(
      db,
      { at: now, actor: c.get('auth').user, action: 'user.update', target: `user:${id}`, before, after },
      { onlyIfPreviousChanged: true },
    );
    // A reset revokes API tokens too: whoever knew the old password may have minted some. Disabling
    // ends login sessions; API tokens stop working while the user is disabled.
    const revokes: 'all' | 'sessions' | null =
      patch.password !== undefined ? 'all' : next.disabled !== 0 && current.disabled === 0 ? 'sessions' : null;
    const [update] = await db.batch([
      updateUserStatement(db, next, current.updated_at, grantedBy),
      audit.statement,
      ...(revokes === null
        ? []
        : [revokeTokensStatement(db, { userId: id, now, kinds: revokes, onlyIfAuditId: audit.id })]),
    ]);
    if ((update?.meta.changes ?? 0) === 0) {
      const reread = await findUserById(db, id);
      if (reread === null) return apiError(c, 404, 'not_found', 'no such user');
      if (grantedBy !== undefined && !(await grantingAdminStillValid(db, grantedBy))) {
        return apiError(c, 401, 'unauthenticated', CHANGED_WHILE_CHECKED);
      }
      if (reread.updated_at !== current.updated_at) {
        return apiError(c, 409, 'conflict', 'the user changed while this request ran; read it again and retry');
      }
      return apiError(c, 409, 'last_admin', LAST_ADMIN, patch.role !== undefined ? 'role' : 'disabled');
    }
    return c.json(toUser(next), 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid('param');
    const db = c.env.DB;
    const current = await findUserById(db, id);
    if (current === null) return apiError(c, 404, 'not_found', 'no such user');
    const now = deps.clock();
    // Read before the delete: the rows go with the user (foreign key), their hubs do not.
    const { results: sessions } = await db
      .prepare('SELECT id FROM sessions WHERE user_id = ?')
      .bind(id)
      .all<{ id: string }>();
    const audit = auditInsert(
      db,
      {
        at: now,
        actor: c.get('auth').user,
        action: 'user.delete',
        target: `user:${id}`,
        before: {
          username: current.username,
          role: current.role,
          disabled: current.disabled !== 0,
          sessions: sessions.length,
        },
        after: null,
      },
      { onlyIfPreviousChanged: true },
    );
    const [del] = await db.batch([deleteUserStatement(db, id), audit.statement]);
    if ((del?.meta.changes ?? 0) === 0) {
      if ((await findUserById(db, id)) === null) return apiError(c, 404, 'not_found', 'no such user');
      return apiError(c, 409, 'last_admin', LAST_ADMIN);
    }
    // Each session's hub stops its runner and deletes its event log and stored transcript. Done
    // before answering, a few at a time, so a 204 means the conversations are gone.
    const ids = sessions.map((s) => s.id);
    for (let i = 0; i < ids.length; i += DESTROY_CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + DESTROY_CONCURRENCY).map((sid) =>
          // The user is gone either way; one hub failing must not keep the others' data.
          hubFor(c.env, sid)
            .destroy()
            .catch((err: unknown) =>
              console.error(
                `user delete: session ${sid} not destroyed:`,
                err instanceof Error ? err.message : typeof err,
              ),
            ),
        ),
      );
    }
    return c.body(null, 204);
  });

  return app;
}
