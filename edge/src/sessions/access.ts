import type { MiddlewareHandler } from 'hono';
import { auditInsert } from '../audit/store.ts';
import { tokenToLookUp } from '../auth/middleware.ts';
import { type ResolvedTokenRow, resolvedToken, resolveTokenStatement } from '../auth/token-store.ts';
import type { AppDeps, AppEnv } from '../context.ts';
import { apiError } from '../errors.ts';
import { ULID_PATTERN } from '../ids.ts';
import { readSettingsStatement, type SettingsRow, type StoredSettings, storedSettings } from '../settings/store.ts';
import { findSessionStatement, type SessionRow } from './store.ts';

// Who may reach a session through /api/sessions/:id, and the session's hub.

type SessionRead = Promise<[SessionRow | null, StoredSettings | undefined]>;

/** The session routes also carry the session `sessionAccess` loaded (and the settings, where asked for). */
export type SessionsEnv = {
  Bindings: Env;
  Variables: AppEnv['Variables'] & {
    session: SessionRow;
    settings?: StoredSettings;
    /** `readSessionEarly`'s read, started before the caller was authenticated. */
    earlyRead?: { withSettings: boolean; read: SessionRead };
    /** When the sessions router began a message (bench only: protocol's MessageHops). */
    arrivedAt?: number;
  };
};

/** The session's row and, where asked, the settings: statements for one D1 batch. */
function sessionStatements(db: D1Database, id: string, withSettings: boolean): D1PreparedStatement[] {
  return [findSessionStatement(db, id), ...(withSettings ? [readSettingsStatement(db)] : [])];
}

/** The first row of a batch's `i`-th statement, or null. */
function firstRow<T>(batch: Promise<D1Result[]>, i: number): Promise<T | null> {
  return batch.then((results) => (results[i]?.results[0] as T | undefined) ?? null);
}

/** What `sessionStatements` read, placed at `at` in the batch. */
function sessionReadOf(batch: Promise<D1Result[]>, at: number, withSettings: boolean): SessionRead {
  return Promise.all([
    firstRow<SessionRow>(batch, at),
    withSettings ? firstRow<SettingsRow>(batch, at + 1).then(storedSettings) : undefined,
  ]);
}

function readSession(db: D1Database, id: string, withSettings: boolean): SessionRead {
  return sessionReadOf(db.batch(sessionStatements(db, id, withSettings)), 0, withSettings);
}

/**
 * Reads what `authenticate` and `sessionAccess` need in one D1 batch, before either runs: the
 * caller's token, the session and, where asked, the settings. One round trip instead of a token
 * lookup and a session read side by side, which D1 serves one after another (a message's way to
 * its runner, a viewer's (re)subscription, the session itself). Registered ahead of
 * `authenticate`, for requests that carry a token `authenticate` would look up (`tokenToLookUp`);
 * what it reads is used only once `authenticate` and `sessionAccess` have let the caller in.
 */
export function readSessionEarly(deps: AppDeps, o: { withSettings?: boolean } = {}): MiddlewareHandler<SessionsEnv> {
  return async (c, next) => {
    const id = c.req.param('id') ?? '';
    const secret = ULID_PATTERN.test(id) ? tokenToLookUp(c) : undefined;
    if (secret !== undefined) {
      const withSettings = o.withSettings === true;
      const db = c.env.DB;
      const batch = resolveTokenStatement(db, secret, deps.clock()).then((token) =>
        db.batch([token, ...sessionStatements(db, id, withSettings)]),
      );
      const resolved = firstRow<ResolvedTokenRow>(batch, 0).then(resolvedToken);
      const read = sessionReadOf(batch, 1, withSettings);
      // What a refused caller never awaits must not end as an unhandled rejection.
      read.catch(() => undefined);
      resolved.catch(() => undefined);
      c.set('tokenLookup', { secret, resolved });
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
