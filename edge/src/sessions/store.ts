import type { ApprovalMode, Backend, Repository, SessionState } from '@switchyard/protocol';
import { iso } from '../clock.ts';
import type { Session } from './schemas.ts';

export interface SessionRow {
  id: string;
  user_id: string;
  backend: Backend;
  title: string | null;
  state: SessionState;
  state_reason: string | null;
  runner_ref: string | null;
  created_at: number;
  updated_at: number;
  stopped_at: number | null;
  approvals: ApprovalMode;
  /** NULL: the session starts with an empty workspace. */
  repository_url: string | null;
  repository_ref: string | null;
}

const LIVE_STATES: SessionState[] = ['starting', 'ready', 'busy', 'idle', 'stopping'];

export function toSession(row: SessionRow): Session {
  return {
    id: row.id,
    title: row.title,
    backend: row.backend,
    state: row.state,
    stateReason: row.state_reason,
    ownerId: row.user_id,
    approvals: row.approvals === 'ask' ? 'ask' : 'auto',
    repository: repositoryOf(row),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

function repositoryOf(row: Pick<SessionRow, 'repository_url' | 'repository_ref'>): Repository | null {
  if (row.repository_url === null) return null;
  return row.repository_ref === null
    ? { url: row.repository_url }
    : { url: row.repository_url, ref: row.repository_ref };
}

export async function insertSession(
  db: D1Database,
  s: {
    id: string;
    userId: string;
    backend: Backend;
    title: string | null;
    state: SessionState;
    reason: string | null;
    now: number;
    approvals: ApprovalMode;
    repository: Repository | null;
  },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sessions (id, user_id, backend, title, state, state_reason, created_at, updated_at, stopped_at, approvals,
         repository_url, repository_ref)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
    )
    .bind(
      s.id,
      s.userId,
      s.backend,
      s.title,
      s.state,
      s.reason,
      s.now,
      s.now,
      s.approvals,
      s.repository?.url ?? null,
      s.repository?.ref ?? null,
    )
    .run();
}

export async function findSession(db: D1Database, id: string): Promise<SessionRow | null> {
  return findSessionStatement(db, id).first<SessionRow>();
}

/** `findSession`'s read as a statement, to batch; its row is a `SessionRow`. */
export function findSessionStatement(db: D1Database, id: string): D1PreparedStatement {
  return db.prepare('SELECT * FROM sessions WHERE id = ?').bind(id);
}

export async function listUserSessions(
  db: D1Database,
  userId: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<{ rows: SessionRow[]; nextCursor: string | null }> {
  const { results } = await db
    .prepare(`SELECT * FROM sessions WHERE user_id = ?1 AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3`)
    .bind(userId, opts.cursor ?? null, opts.limit + 1)
    .all<SessionRow>();
  return page(results, opts.limit);
}

export async function listAllSessions(
  db: D1Database,
  opts: { live: boolean; limit: number; cursor?: string | undefined },
): Promise<{ rows: Array<SessionRow & { username: string }>; nextCursor: string | null }> {
  const live = opts.live ? `AND s.state IN (${LIVE_STATES.map((s) => `'${s}'`).join(', ')})` : '';
  const { results } = await db
    .prepare(
      `SELECT s.*, u.username AS username FROM sessions s JOIN users u ON u.id = s.user_id
       WHERE (?1 IS NULL OR s.id < ?1) ${live} ORDER BY s.id DESC LIMIT ?2`,
    )
    .bind(opts.cursor ?? null, opts.limit + 1)
    .all<SessionRow & { username: string }>();
  return page(results, opts.limit);
}

function page<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  if (rows.length <= limit) return { rows, nextCursor: null };
  const kept = rows.slice(0, limit);
  return { rows: kept, nextCursor: kept.at(-1)?.id ?? null };
}

export async function renameSession(db: D1Database, id: string, title: string | null, now: number): Promise<void> {
  await db.prepare('UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?').bind(title, now, id).run();
}

export async function deleteSession(db: D1Database, id: string): Promise<void> {
  await db.prepare('DELETE FROM sessions WHERE id = ?').bind(id).run();
}
