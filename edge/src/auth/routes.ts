import { createRoute } from '@hono/zod-openapi';
import { iso } from '../clock.ts';
import { clientAddress } from '../client-address.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { newRouter, type AppDeps } from '../context.ts';
import { apiError, errorResponses } from '../errors.ts';
import { newId } from '../ids.ts';
import { PublicUserSchema } from '../users/schemas.ts';
import {
  findUserById,
  findUserByUsername,
  toPublicUser,
  updatePasswordHash,
  updateUserStatement,
} from '../users/store.ts';
import { auditInsert } from '../audit/store.ts';
import { originNotForeign } from './csrf.ts';
import { authenticate, originCheckOf } from './middleware.ts';
import { DUMMY_PASSWORD_HASH, hashPassword, needsRehash } from './password.ts';
import { ChangePasswordSchema, LoginResultSchema, LoginSchema, PasswordChangedSchema } from './schemas.ts';
import { requireCurrentPassword } from './current-password.ts';
import { clearSessionCookie, setSessionCookie } from './session-cookie.ts';
import { isFamiliar, loginIdentity, loginThrottleKeys, reserveAttempt, settleSuccess } from './throttle.ts';
import { issueToken, revokeToken, revokeTokensStatement } from './token-store.ts';
import { SESSION_TTL_MS } from './tokens.ts';

const loginRoute = createRoute({
  method: 'post',
  path: '/auth/login',
  tags: ['auth'],
  summary: 'Log in with a username and password',
  request: { body: { required: true, content: jsonContent(LoginSchema) } },
  responses: {
    200: {
      description:
        'logged in; also sets the HttpOnly session cookie (`__Host-sy_session` over https, `sy_session` on plain-http loopback)',
      content: jsonContent(LoginResultSchema),
    },
    ...errorResponses(400, 401, 403, 413, 415, 429),
  },
});

const logoutRoute = createRoute({
  method: 'post',
  path: '/auth/logout',
  tags: ['auth'],
  summary: 'Revoke the token this request used and clear the cookie',
  security: AUTHENTICATED,
  responses: { 204: { description: 'logged out' }, ...errorResponses(401, 403) },
});

const changePasswordRoute = createRoute({
  method: 'post',
  path: '/me/password',
  tags: ['auth'],
  summary:
    'Change your own password; revokes every login session and API token of yours, this one too, and starts a new login session',
  security: AUTHENTICATED,
  request: { body: { required: true, content: jsonContent(ChangePasswordSchema) } },
  responses: {
    200: {
      description: 'changed; the new session token is also set as the HttpOnly session cookie',
      content: jsonContent(PasswordChangedSchema),
    },
    ...errorResponses(400, 401, 403, 409, 413, 415, 429),
  },
});

const meRoute = createRoute({
  method: 'get',
  path: '/me',
  tags: ['auth'],
  summary: 'Who am I',
  security: AUTHENTICATED,
  responses: { 200: { description: 'the caller', content: jsonContent(PublicUserSchema) }, ...errorResponses(401) },
});

export function authRoutes(deps: AppDeps) {
  const app = newRouter();

  app.openapi(loginRoute, async (c) => {
    // Login CSRF: a foreign page must not be able to log a victim into the attacker's account.
    if (!originNotForeign(originCheckOf(c))) return apiError(c, 403, 'csrf_rejected', 'cross-site login refused');
    const { username, password } = c.req.valid('json');
    const db = c.env.DB;
    const now = deps.clock();
    const id = loginIdentity(username, clientAddress(c));
    const keys = loginThrottleKeys(id, await isFamiliar(db, id, now));

    // Counted before PBKDF2 runs: parallel guesses cannot all slip past one stale check.
    const reservation = await reserveAttempt(db, keys, newId(now), now);
    if (!reservation.allowed) {
      c.header('Retry-After', String(reservation.retryAfterSeconds));
      return apiError(c, 429, 'rate_limited', 'too many failed logins; try again later');
    }

    const user = await findUserByUsername(db, username);
    const ok = await deps.verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
    if (!ok || user === null || user.disabled !== 0) {
      // Evaluated failures only (refused attempts never reach PBKDF2), so the throttle bounds these.
      // A name no account has is not written down: it is as likely a password typed into the wrong
      // field, and every admin reads this log.
      await auditInsert(
        db,
        {
          at: now,
          actor: null,
          action: 'auth.login_failed',
          target: user === null ? 'account:unknown' : `user:${user.id}`,
          before: null,
          after: {
            ...(user !== null && { username: user.username }),
            address: id.address,
            ...(user !== null && user.disabled !== 0 && ok && { disabled: true }),
          },
        },
        { onlyIfPreviousChanged: false },
      ).statement.run();
      // Already counted by the reservation; the failure that reached a limit answers 429 itself.
      if (reservation.lockedBy !== null) {
        c.header('Retry-After', String(reservation.lockedBy.retryAfterSeconds));
        return apiError(c, 429, 'rate_limited', 'too many failed logins; try again later');
      }
      return apiError(c, 401, 'invalid_credentials', 'invalid username or password');
    }

    await settleSuccess(db, id, keys, now);
    let passwordHash = user.password_hash;
    if (needsRehash(passwordHash)) {
      const rehashed = await hashPassword(password);
      // Only over the hash just checked: a reset meanwhile must not get the old password back.
      if (await updatePasswordHash(db, user.id, passwordHash, rehashed)) passwordHash = rehashed;
    }
    const issued = await issueToken(db, {
      userId: user.id,
      kind: 'session',
      name: null,
      now,
      ttlMs: SESSION_TTL_MS,
      passwordHash,
    });
    // The password was reset, or the account disabled, while this login checked the old one.
    if (issued === null) return apiError(c, 401, 'invalid_credentials', 'invalid username or password');
    setSessionCookie(c, issued.secret, issued.row.expires_at, now);
    return c.json({ user: toPublicUser(user), token: issued.secret, expiresAt: iso(issued.row.expires_at) }, 200);
  });

  app.use('/auth/logout', authenticate(deps));
  app.openapi(logoutRoute, async (c) => {
    await revokeToken(c.env.DB, c.get('auth').tokenId, deps.clock());
    clearSessionCookie(c);
    return c.body(null, 204);
  });

  app.use('/me/password', authenticate(deps));
  app.openapi(changePasswordRoute, async (c) => {
    const { currentPassword, newPassword } = c.req.valid('json');
    const auth = c.get('auth');
    const checked = await requireCurrentPassword(c, deps, currentPassword, 'changing the password');
    if ('refused' in checked) {
      const { refused } = checked;
      return apiError(c, refused.status, refused.code, refused.message, refused.field);
    }
    const db = c.env.DB;
    const current = await findUserById(db, auth.user.id);
    if (current === null) return apiError(c, 401, 'unauthenticated', 'invalid, expired or revoked token');
    // Reset by an admin since the current password was checked: that password is no longer it.
    if (current.password_hash !== checked.passwordHash)
      return apiError(c, 409, 'conflict', 'the account changed while this request ran; try again');
    const now = Math.max(deps.clock(), current.updated_at + 1);
    const audit = auditInsert(
      db,
      {
        at: now,
        actor: auth.user,
        action: 'user.update',
        target: `user:${current.id}`,
        before: {},
        after: { passwordChanged: true, via: 'self' },
      },
      { onlyIfPreviousChanged: true },
    );
    const newHash = await hashPassword(newPassword);
    const [update] = await db.batch([
      updateUserStatement(db, { ...current, password_hash: newHash, updated_at: now }, current.updated_at),
      audit.statement,
      // Everything the old password could have produced ends, the session making this change too:
      // a stolen cookie is this very token, so keeping it would keep the thief's copy.
      revokeTokensStatement(db, { userId: current.id, now, kinds: 'all', onlyIfAuditId: audit.id }),
    ]);
    if ((update?.meta.changes ?? 0) === 0) {
      return apiError(c, 409, 'conflict', 'the account changed while this request ran; try again');
    }
    const issued = await issueToken(db, {
      userId: current.id,
      kind: 'session',
      name: null,
      now,
      ttlMs: SESSION_TTL_MS,
      passwordHash: newHash,
    });
    if (issued === null)
      return apiError(c, 409, 'conflict', 'the account changed right after the new password was set; sign in again');
    setSessionCookie(c, issued.secret, issued.row.expires_at, now);
    return c.json({ token: issued.secret, expiresAt: iso(issued.row.expires_at) }, 200);
  });

  app.use('/me', authenticate(deps));
  app.openapi(meRoute, (c) => c.json(c.get('auth').user, 200));

  return app;
}
