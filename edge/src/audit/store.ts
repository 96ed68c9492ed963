import type { AuditAction, AuditEntry, AuditQuery } from './schemas.ts';
import { iso } from '../clock.ts';
import { newId } from '../ids.ts';

interface AuditRecord {
  at: number;
  actor: { id: string; username: string } | null;
  action: AuditAction;
  target: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

interface AuditRow {
  id: string;
  at: number;
  actor_id: string | null;
  actor_username: string | null;
  action: AuditAction;
  target: string | null;
  before: string | null;
  after: string | null;
}

/**
 * The INSERT for one audit entry, to be batched with the change it records so both commit or
 * neither does. `onlyIfPreviousChanged` makes the insert conditional on the statement just before
 * it in the batch having changed a row: a guarded UPDATE that matched nothing leaves no trace.
 */
export function auditInsert(
  db: D1Database,
  rec: AuditRecord,
  opts: { onlyIfPreviousChanged: boolean },
): { id: string; statement: D1PreparedStatement } {
  const id = newId(rec.at);
  const values = [
    id,
    rec.at,
    rec.actor?.id ?? null,
    rec.actor?.username ?? null,
    rec.action,
    rec.target,
    rec.before === null ? null : JSON.stringify(rec.before),
    rec.after === null ? null : JSON.stringify(rec.after),
  ];
  const cols = '(id, at, actor_id, actor_username, action, target, before, after)';
  const sql = opts.onlyIfPreviousChanged
    ? `INSERT INTO audit_log ${cols} SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE changes() > 0`
    : `INSERT INTO audit_log ${cols} VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
  return { id, statement: db.prepare(sql).bind(...values) };
}

function parseJson(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  const v: unknown = JSON.parse(text);
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: iso(row.at),
    actor: row.actor_id === null ? null : { id: row.actor_id, username: row.actor_username ?? '' },
    action: row.action,
    target: row.target,
    before: parseJson(row.before),
    after: parseJson(row.after),
  };
}

/** Newest first; ids are ULIDs so "older than the cursor" is `id < cursor`. */
export async function listAudit(
  db: D1Database,
  q: AuditQuery,
): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
  const where: string[] = [];
  const binds: unknown[] = [];
  if (q.cursor !== undefined) {
    where.push('id < ?');
    binds.push(q.cursor);
  }
  if (q.action !== undefined) {
    where.push('action = ?');
    binds.push(q.action);
  }
  const sql =
    `SELECT id, at, actor_id, actor_username, action, target, before, after FROM audit_log` +
    (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
    ` ORDER BY id DESC LIMIT ?`;
  // One extra row tells whether another page exists without a COUNT.
  const { results } = await db
    .prepare(sql)
    .bind(...binds, q.limit + 1)
    .all<AuditRow>();
  const page = results.slice(0, q.limit);
  const last = page.at(-1);
  return {
    entries: page.map(toEntry),
    nextCursor: results.length > q.limit && last !== undefined ? last.id : null,
  };
}
