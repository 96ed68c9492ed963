import { auditInsert } from '../audit/store.ts';
import { settingsFromStored, type Settings } from './schema.ts';

export interface StoredSettings {
  settings: Settings;
  version: number;
}

export async function readSettings(db: D1Database): Promise<StoredSettings> {
  const row = await db
    .prepare('SELECT value, version FROM settings WHERE id = 1')
    .first<{ value: string; version: number }>();
  if (row === null) return { settings: settingsFromStored({}), version: 0 };
  let parsed: unknown = {};
  try {
    parsed = JSON.parse(row.value);
  } catch {
    // A hand-edited row that is not JSON: serve defaults rather than failing every request.
  }
  return { settings: settingsFromStored(parsed), version: row.version };
}

/**
 * Writes `next` and its audit entry in one transaction, only if nobody else wrote since
 * `version` was read. Returns false when that compare-and-set lost.
 */
export async function writeSettings(
  db: D1Database,
  opts: {
    next: Settings;
    version: number;
    now: number;
    actor: { id: string; username: string };
    before: Record<string, unknown>;
    after: Record<string, unknown>;
  },
): Promise<boolean> {
  const update = db
    .prepare(
      `INSERT INTO settings (id, value, version, updated_at, updated_by) VALUES (1, ?1, ?2 + 1, ?3, ?4)
       ON CONFLICT(id) DO UPDATE SET value = ?1, version = ?2 + 1, updated_at = ?3, updated_by = ?4
       WHERE settings.version = ?2`,
    )
    .bind(JSON.stringify(opts.next), opts.version, opts.now, opts.actor.id);
  const audit = auditInsert(
    db,
    {
      at: opts.now,
      actor: opts.actor,
      action: 'settings.update',
      target: 'settings',
      before: opts.before,
      after: opts.after,
    },
    { onlyIfPreviousChanged: true },
  );
  const [res] = await db.batch([update, audit.statement]);
  return (res?.meta.changes ?? 0) > 0;
}
