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

interface IssuedToken {
  row: TokenRow;
  /** Shown to the caller once and never stored. */
  secret: string;
}

interface IssueOptions {
  userId: string;
  kind: TokenKind;
  name: string | null;
  now: number;
  ttlMs: number;
  /**
   * The password hash the caller checked the password against. The token is made only while the
   * account still has it and is enabled: a login or a token creation that checked the password
   * just before a reset or a disable would otherwise mint a token after that revoked them all.
   */
  passwordHash: string;
}

/**
 * The INSERT for a new token, to batch with its audit entry; the secret is returned once. It
 * inserts nothing (0 changes) when the account's password changed or it was disabled meanwhile.
 */
export async function issueTokenStatement(
  db: D1Database,
  opts: IssueOptions,
): Promise<IssuedToken & { statement: D1PreparedStatement }> {
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
  const statement = db
    .prepare(
      `INSERT INTO auth_tokens (id, user_id, kind, name, token_hash, created_at, expires_at)
       SELECT ?, ?, ?, ?, ?, ?, ?
       WHERE EXISTS (SELECT 1 FROM users WHERE id = ? AND password_hash = ? AND disabled = 0)`,
    )
    .bind(
      row.id,
      row.user_id,
      row.kind,
      row.name,
      await hashToken(secret),
      row.created_at,
      row.expires_at,
      opts.userId,
      opts.passwordHash,
    );
  return { row, secret, statement };
}

/** A new token, or null when the account's password changed or it was disabled meanwhile. */
export async function issueToken(db: D1Database, opts: IssueOptions): Promise<IssuedToken | null> {
  const { row, secret, statement } = await issueTokenStatement(db, opts);
  const r = await statement.run();
  return r.meta.changes === 1 ? { row, secret } : null;
}

export interface ResolvedToken {
  tokenId: string;
  kind: TokenKind;
  lastUsedAt: number | null;
  user: { id: string; username: string; role: Role };
}

/** The row `resolveTokenStatement` reads. */
export interface ResolvedTokenRow {
  token_id: string;
  kind: TokenKind;
  last_used_at: number | null;
  user_id: string;
  username: string;
  role: Role;
}

/** The live token behind a secret: not revoked, not expired, owner not disabled. */
export async function resolveToken(db: D1Database, secret: string, now: number): Promise<ResolvedToken | null> {
  return resolvedToken(await (await resolveTokenStatement(db, secret, now)).first<ResolvedTokenRow>());
}

/** `resolveToken`'s read as a statement, to batch with the reads of the request it authenticates. */
export async function resolveTokenStatement(db: D1Database, secret: string, now: number): Promise<D1PreparedStatement> {
  return db
    .prepare(
      `SELECT t.id AS token_id, t.kind, t.last_used_at, u.id AS user_id, u.username, u.role
       FROM auth_tokens t JOIN users u ON u.id = t.user_id
       WHERE t.token_hash = ? AND t.revoked_at IS NULL AND t.expires_at > ? AND u.disabled = 0`,
    )
    .bind(await hashToken(secret), now);
}

/** What `resolveTokenStatement` read: its row, or null for no live token. */
export function resolvedToken(row: ResolvedTokenRow | null): ResolvedToken | null {
  if (row === null) return null;
  return {
    tokenId: row.token_id,
    kind: row.kind,
    lastUsedAt: row.last_used_at,
    user: { id: row.user_id, username: row.username, role: row.role },
  };
}

/** Whether a token is still live and its user still enabled, with the user's current role. */
export async function liveTokenRole(db: D1Database, tokenId: string, now: number): Promise<Role | null> {
  const row = await db
    .prepare(
      `SELECT u.role FROM auth_tokens t JOIN users u ON u.id = t.user_id
       WHERE t.id = ? AND t.revoked_at IS NULL AND t.expires_at > ? AND u.disabled = 0`,
    )
    .bind(tokenId, now)
    .first<{ role: Role }>();
  return row?.role ?? null;
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

/** Revokes one of the user's live API tokens; changes nothing when there is none with that id (or not theirs). */
export function revokeOwnApiTokenStatement(
  db: D1Database,
  userId: string,
  id: string,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE auth_tokens SET revoked_at = ?
       WHERE id = ? AND user_id = ? AND kind = 'api' AND revoked_at IS NULL AND expires_at > ?`,
    )
    .bind(now, id, userId, now);
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
 * Statement that revokes a user's tokens, batched with password resets and disabling: `sessions`
 * ends login sessions only, `all` also API tokens (a password reset means the old credentials
 * may be in someone else's hands, and so may anything minted with them). `onlyIfAuditId` makes it
 * conditional on that audit entry having been written earlier in the same batch, i.e. on the
 * guarded change having actually happened.
 */
export function revokeTokensStatement(
  db: D1Database,
  opts: { userId: string; now: number; kinds: 'sessions' | 'all'; onlyIfAuditId?: string },
): D1PreparedStatement {
  let sql = 'UPDATE auth_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL';
  const binds: unknown[] = [opts.now, opts.userId];
  if (opts.kinds === 'sessions') sql += " AND kind = 'session'";
  if (opts.onlyIfAuditId !== undefined) {
    sql += ' AND EXISTS (SELECT 1 FROM audit_log WHERE id = ?)';
    binds.push(opts.onlyIfAuditId);
  }
  return db.prepare(sql).bind(...binds);
}
