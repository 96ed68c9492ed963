import { newId } from '../ids.ts';
import type { Role } from '../users/schemas.ts';
import { generateTokenSecret, hashToken, type TokenKind } from './tokens.ts';

export interface TokenRow {
  id: string;
  user_id: string;
  kind: TokenKind;
  name: string | null;
  created_at: number;
  expires_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface IssuedToken {
  row: TokenRow;
  /** Shown to the caller once and never stored. */
  secret: string;
}

export async function issueToken(
  db: D1Database,
  opts: { userId: string; kind: TokenKind; name: string | null; now: number; ttlMs: number },
): Promise<IssuedToken> {
  const secret = generateTokenSecret();
  const row: TokenRow = {
    id: newId(opts.now),
    user_id: opts.userId,
    kind: opts.kind,
    name: opts.name,
    created_at: opts.now,
    expires_at: opts.now + opts.ttlMs,
    last_used_at: null,
    revoked_at: null,
  };
  await db
    .prepare(
      `INSERT INTO auth_tokens (id, user_id, kind, name, token_hash, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(row.id, row.user_id, row.kind, row.name, await hashToken(secret), row.created_at, row.expires_at)
    .run();
  return { row, secret };
}

export interface ResolvedToken {
  tokenId: string;
  lastUsedAt: number | null;
  user: { id: string; username: string; role: Role };
}

/** The live token behind a secret: not revoked, not expired, owner not disabled. */
export async function resolveToken(db: D1Database, secret: string, now: number): Promise<ResolvedToken | null> {
  const row = await db
    .prepare(
      `SELECT t.id AS token_id, t.last_used_at, u.id AS user_id, u.username, u.role
       FROM auth_tokens t JOIN users u ON u.id = t.user_id
       WHERE t.token_hash = ? AND t.revoked_at IS NULL AND t.expires_at > ? AND u.disabled = 0`,
    )
    .bind(await hashToken(secret), now)
    .first<{ token_id: string; last_used_at: number | null; user_id: string; username: string; role: Role }>();
  if (row === null) return null;
  return {
    tokenId: row.token_id,
    lastUsedAt: row.last_used_at,
    user: { id: row.user_id, username: row.username, role: row.role },
  };
}

// Writing on every request would turn each read into a D1 write; minutes are precise enough.
const LAST_USED_GRANULARITY_MS = 5 * 60 * 1000;

export async function touchToken(db: D1Database, t: ResolvedToken, now: number): Promise<void> {
  if (t.lastUsedAt !== null && now - t.lastUsedAt < LAST_USED_GRANULARITY_MS) return;
  await db.prepare('UPDATE auth_tokens SET last_used_at = ? WHERE id = ?').bind(now, t.tokenId).run();
}

export async function revokeToken(db: D1Database, id: string, now: number): Promise<void> {
  await db.prepare('UPDATE auth_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').bind(now, id).run();
}

/** Revokes one of the user's live API tokens; false when there is none with that id (or not theirs). */
export async function revokeOwnApiToken(db: D1Database, userId: string, id: string, now: number): Promise<boolean> {
  const res = await db
    .prepare(
      `UPDATE auth_tokens SET revoked_at = ?
       WHERE id = ? AND user_id = ? AND kind = 'api' AND revoked_at IS NULL AND expires_at > ?`,
    )
    .bind(now, id, userId, now)
    .run();
  return res.meta.changes > 0;
}

export async function listLiveApiTokens(db: D1Database, userId: string, now: number): Promise<TokenRow[]> {
  const { results } = await db
    .prepare(
      `SELECT id, user_id, kind, name, created_at, expires_at, last_used_at, revoked_at FROM auth_tokens
       WHERE user_id = ? AND kind = 'api' AND revoked_at IS NULL AND expires_at > ? ORDER BY id`,
    )
    .bind(userId, now)
    .all<TokenRow>();
  return results;
}

export async function findLiveApiToken(
  db: D1Database,
  userId: string,
  id: string,
  now: number,
): Promise<TokenRow | null> {
  return db
    .prepare(
      `SELECT id, user_id, kind, name, created_at, expires_at, last_used_at, revoked_at FROM auth_tokens
       WHERE id = ? AND user_id = ? AND kind = 'api' AND revoked_at IS NULL AND expires_at > ?`,
    )
    .bind(id, userId, now)
    .first<TokenRow>();
}

/**
 * Statement that ends a user's login sessions, batched with password resets and disabling.
 * `onlyIfAuditId` makes it conditional on that audit entry having been written earlier in the
 * same batch, i.e. on the guarded change having actually happened.
 */
export function revokeSessionsStatement(
  db: D1Database,
  userId: string,
  now: number,
  onlyIfAuditId?: string,
): D1PreparedStatement {
  const base = `UPDATE auth_tokens SET revoked_at = ? WHERE user_id = ? AND kind = 'session' AND revoked_at IS NULL`;
  return onlyIfAuditId === undefined
    ? db.prepare(base).bind(now, userId)
    : db.prepare(`${base} AND EXISTS (SELECT 1 FROM audit_log WHERE id = ?)`).bind(now, userId, onlyIfAuditId);
}
