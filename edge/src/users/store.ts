import { iso } from '../clock.ts';
import type { PublicUser, Role, User } from './schemas.ts';

export interface UserRow {
  id: string;
  username: string;
  password_hash: string;
  role: Role;
  disabled: number;
  created_at: number;
  updated_at: number;
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    role: row.role,
    disabled: row.disabled !== 0,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function toPublicUser(row: Pick<UserRow, 'id' | 'username' | 'role'>): PublicUser {
  return { id: row.id, username: row.username, role: row.role };
}

const COLUMNS = 'id, username, password_hash, role, disabled, created_at, updated_at';

export async function findUserById(db: D1Database, id: string): Promise<UserRow | null> {
  return db.prepare(`SELECT ${COLUMNS} FROM users WHERE id = ?`).bind(id).first<UserRow>();
}

/** Usernames compare case-insensitively (the column is COLLATE NOCASE). */
export async function findUserByUsername(db: D1Database, username: string): Promise<UserRow | null> {
  return db.prepare(`SELECT ${COLUMNS} FROM users WHERE username = ?`).bind(username).first<UserRow>();
}

export async function listUsers(db: D1Database): Promise<UserRow[]> {
  const { results } = await db.prepare(`SELECT ${COLUMNS} FROM users ORDER BY username`).all<UserRow>();
  return results;
}

/**
 * The admin who grants access, as their password was checked for this request: the write happens
 * only while that admin still has that password hash, is enabled and is an admin. A reset or a
 * demotion that lands while the request runs then stops it, as it stops a racing token creation.
 */
export interface GrantingAdmin {
  id: string;
  passwordHash: string;
}

const GRANTER_STILL_VALID = `EXISTS (SELECT 1 FROM users AS g
  WHERE g.id = ? AND g.password_hash = ? AND g.disabled = 0 AND g.role = 'admin')`;

export function insertUserStatement(db: D1Database, row: UserRow, grantedBy: GrantingAdmin): D1PreparedStatement {
  return db
    .prepare(`INSERT INTO users (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${GRANTER_STILL_VALID}`)
    .bind(
      row.id,
      row.username,
      row.password_hash,
      row.role,
      row.disabled,
      row.created_at,
      row.updated_at,
      grantedBy.id,
      grantedBy.passwordHash,
    );
}

/** Whether the admin's password check still holds (after a guarded write changed nothing). */
export async function grantingAdminStillValid(db: D1Database, grantedBy: GrantingAdmin): Promise<boolean> {
  const r = await db
    .prepare(`SELECT ${GRANTER_STILL_VALID} AS ok`)
    .bind(grantedBy.id, grantedBy.passwordHash)
    .first<{ ok: number }>();
  return r?.ok === 1;
}

// "Somebody else is still an active admin, or this row is not one / stays one": the guard that
// keeps at least one admin able to log in. Evaluated inside the writing statement so two
// concurrent demotions cannot both pass a separate check.
const KEEPS_AN_ADMIN = `(
  (role <> 'admin' OR disabled = 1)
  OR EXISTS (SELECT 1 FROM users AS o WHERE o.role = 'admin' AND o.disabled = 0 AND o.id <> users.id)
)`;

/**
 * Writes the new role/disabled/hash if the row still has the `updated_at` the caller read
 * (so concurrent edits are not silently merged), the change leaves an active admin, and, for a
 * change that grants access, the granting admin's password check still holds.
 */
export function updateUserStatement(
  db: D1Database,
  next: Pick<UserRow, 'id' | 'role' | 'disabled' | 'password_hash' | 'updated_at'>,
  readUpdatedAt: number,
  grantedBy?: GrantingAdmin,
): D1PreparedStatement {
  const staysAdmin = next.role === 'admin' && next.disabled === 0 ? 1 : 0;
  const sql = `UPDATE users SET role = ?, disabled = ?, password_hash = ?, updated_at = ?
       WHERE id = ? AND updated_at = ? AND (? = 1 OR ${KEEPS_AN_ADMIN})`;
  const args = [next.role, next.disabled, next.password_hash, next.updated_at, next.id, readUpdatedAt, staysAdmin];
  return grantedBy === undefined
    ? db.prepare(sql).bind(...args)
    : db.prepare(`${sql} AND ${GRANTER_STILL_VALID}`).bind(...args, grantedBy.id, grantedBy.passwordHash);
}

export function deleteUserStatement(db: D1Database, id: string): D1PreparedStatement {
  return db.prepare(`DELETE FROM users WHERE id = ? AND ${KEEPS_AN_ADMIN}`).bind(id);
}

/** Replaces `previous` with `hash` (a rehash); false when the password changed meanwhile. */
export async function updatePasswordHash(db: D1Database, id: string, previous: string, hash: string): Promise<boolean> {
  const r = await db
    .prepare('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?')
    .bind(hash, id, previous)
    .run();
  return r.meta.changes === 1;
}
