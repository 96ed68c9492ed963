import { auditInsert } from '../audit/store.ts';
import { settingsFromStored, type Settings } from './schema.ts';

export interface StoredSettings {
  settings: Settings;
  version: number;
}

/** The settings row as stored: the JSON document and its compare-and-set version. */
export interface SettingsRow {
  value: string;
  version: number;
}

export async function readSettings(db: D1Database): Promise<StoredSettings> {
  return storedSettings(await readSettingsStatement(db).first<SettingsRow>());
}

/** `readSettings`'s read as a statement, to batch with the reads of the request that needs them. */
export function readSettingsStatement(db: D1Database): D1PreparedStatement {
  return db.prepare('SELECT value, version FROM settings WHERE id = 1');
}

/** The settings from what `readSettingsStatement` read (defaults for no row). */
export function storedSettings(row: SettingsRow | null): StoredSettings {
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
