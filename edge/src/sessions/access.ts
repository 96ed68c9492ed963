import type { MiddlewareHandler } from 'hono';
import { auditInsert } from '../audit/store.ts';
import { carriesToken } from '../auth/middleware.ts';
import type { AppDeps, AuthContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { ULID_PATTERN } from '../ids.ts';
import { readSettings, type StoredSettings } from '../settings/store.ts';
import { findSession, type SessionRow } from './store.ts';

// Who may reach a session through /api/sessions/:id, and the session's hub.

type SessionRead = Promise<[SessionRow | null, StoredSettings | undefined]>;

/** The session routes also carry the session `sessionAccess` loaded (and the settings, where asked for). */
export type SessionsEnv = {
  Bindings: Env;
  Variables: {
    auth: AuthContext;
    session: SessionRow;
    settings?: StoredSettings;
    /** `readSessionEarly`'s read, started before the caller was authenticated. */
    earlyRead?: { withSettings: boolean; read: SessionRead };
    /** When the sessions router began a message (bench only: protocol's MessageHops). */
    arrivedAt?: number;
  };
};

function readSession(db: D1Database, id: string, withSettings: boolean): SessionRead {
  return Promise.all([findSession(db, id), withSettings ? readSettings(db) : undefined]);
}

/**
 * Starts `sessionAccess`'s D1 read before the caller is authenticated, so the token lookup and
 * the session read are one round trip instead of two in a row (a message's way to its runner, a
 * viewer's (re)subscription, the session itself). Registered ahead of `authenticate`, for
 * requests that carry something shaped like a token; what it reads is used only once
 * `sessionAccess` has let the caller in.
 */
export function readSessionEarly(o: { withSettings?: boolean } = {}): MiddlewareHandler<SessionsEnv> {
  return async (c, next) => {
    const id = c.req.param('id') ?? '';
    if (ULID_PATTERN.test(id) && carriesToken(c)) {
      const withSettings = o.withSettings === true;
      const read = readSession(c.env.DB, id, withSettings);
      // A caller authenticate refuses never awaits it.
      read.catch(() => undefined);
      c.set('earlyRead', { withSettings, read });
    }
    await next();
  };
}

/** The session's hub (one Durable Object per session, named by its id). */
export function hubFor(env: Env, sessionId: string) {
  return env.SESSION_HUB.get(env.SESSION_HUB.idFromName(sessionId));
}

/**
 * Loads the session named by `:id` for the caller. Another user's session is a 404 (its
 * existence never leaks) unless the caller is an admin; `owner` routes refuse admins who are
 * not the owner with 403. `withSettings` reads the settings alongside the session, for a route
 * that needs both: one D1 round trip instead of two in a row (a message's way to its runner).
 */
export function sessionAccess(
  deps: AppDeps,
  mode: 'read' | 'owner',
  o: { withSettings?: boolean } = {},
): MiddlewareHandler<SessionsEnv> {
  return async (c, next) => {
    const id = c.req.param('id') ?? '';
    if (!ULID_PATTERN.test(id)) return apiError(c, 404, 'not_found', 'no such session');
    const withSettings = o.withSettings === true;
    const early = c.get('earlyRead');
    const [row, settings] = await (early?.withSettings === withSettings
      ? early.read
      : readSession(c.env.DB, id, withSettings));
    const { user } = c.get('auth');
    if (row === null || (row.user_id !== user.id && user.role !== 'admin')) {
      return apiError(c, 404, 'not_found', 'no such session');
    }
    if (mode === 'owner' && row.user_id !== user.id) {
      return apiError(c, 403, 'forbidden', "only the session's owner can do this");
    }
    if (row.user_id !== user.id) {
      // An admin looking into (or deleting) someone else's conversation leaves a trace.
      const now = deps.clock();
      const deleting = c.req.method === 'DELETE';
      await auditInsert(
        c.env.DB,
        {
          at: now,
          actor: user,
          action: deleting ? 'session.delete' : 'session.read',
          target: `session:${row.id}`,
          before: deleting ? { ownerId: row.user_id, title: row.title } : null,
          after: deleting
            ? null
            : { ownerId: row.user_id, route: new URL(c.req.url).pathname.replace(/^.*\/sessions\/[^/]+/, '') || '/' },
        },
        { onlyIfPreviousChanged: false },
      ).statement.run();
    }
    c.set('session', row);
    if (settings !== undefined) c.set('settings', settings);
    await next();
    return undefined;
  };
}
