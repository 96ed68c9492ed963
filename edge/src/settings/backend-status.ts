import { BackendSchema, type Backend } from '@switchyard/protocol';
import { runProbe, type BackendProbe, type ProbeResult } from './backend-probe.ts';

interface BackendStatus extends ProbeResult {
  name: Backend;
}

interface StatusRow {
  name: Backend;
  available: number;
  version: string | null;
  reason: string | null;
  fix: string | null;
  checked_at: number;
}

function fromRow(r: StatusRow): BackendStatus {
  return {
    name: r.name,
    available: r.available !== 0,
    ...(r.version === null ? {} : { version: r.version }),
    ...(r.reason === null ? {} : { reason: r.reason }),
    ...(r.fix === null ? {} : { fix: r.fix }),
  };
}

async function saveStatus(db: D1Database, name: Backend, result: ProbeResult, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO backend_status (name, available, version, reason, fix, checked_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET available = excluded.available, version = excluded.version,
         reason = excluded.reason, fix = excluded.fix, checked_at = excluded.checked_at`,
    )
    .bind(name, result.available ? 1 : 0, result.version ?? null, result.reason ?? null, result.fix ?? null, now)
    .run();
}

// A probe is bounded by its timeout; the margin covers saving the answer. A lease outlives its
// holder only when the isolate died mid-probe, and then expires by itself.
const LEASE_MARGIN_MS = 30_000;

/**
 * Starts a probe of `backend` unless one is already running anywhere (single flight through the
 * `probe_lease` row). Returns the running probe (`done` saves its answer for readers of
 * /api/settings and releases the lease), or null when another probe holds it. Wrapped in an
 * object because awaiting a promise of a promise would wait for the probe itself.
 */
export async function startProbe(
  db: D1Database,
  probe: BackendProbe,
  backend: Backend,
  opts: { now: number; timeoutMs: number; leaseId: string },
): Promise<{ done: Promise<ProbeResult> } | null> {
  const claimed = await db
    .prepare(
      `INSERT INTO probe_lease (name, lease_id, until) VALUES (?1, ?2, ?3)
       ON CONFLICT(name) DO UPDATE SET lease_id = excluded.lease_id, until = excluded.until
       WHERE probe_lease.until <= ?4
       RETURNING lease_id`,
    )
    .bind(backend, opts.leaseId, opts.now + opts.timeoutMs + LEASE_MARGIN_MS, opts.now)
    .first<{ lease_id: string }>();
  if (claimed?.lease_id !== opts.leaseId) return null;
  const running = runProbe(probe, backend, opts.timeoutMs);
  const done = (async () => {
    try {
      const result = await running;
      await saveStatus(db, backend, result, opts.now);
      return result;
    } finally {
      await db.prepare('DELETE FROM probe_lease WHERE name = ? AND lease_id = ?').bind(backend, opts.leaseId).run();
    }
  })();
  return { done };
}

interface StoredStatus extends BackendStatus {
  /** When the answer was probed; null when no probe has answered yet. */
  checkedAt: number | null;
}

const NOT_CHECKED: ProbeResult = {
  available: false,
  reason: 'not checked yet',
  fix: 'an admin opening the settings starts a check',
};

/** The last stored answer for every backend; never probes. */
export async function storedStatuses(db: D1Database): Promise<StoredStatus[]> {
  const { results } = await db
    .prepare('SELECT name, available, version, reason, fix, checked_at FROM backend_status')
    .all<StatusRow>();
  const byName = new Map(results.map((r) => [r.name, r]));
  return BackendSchema.options.map((name) => {
    const row = byName.get(name);
    return row === undefined
      ? { name, ...NOT_CHECKED, checkedAt: null }
      : { ...fromRow(row), checkedAt: row.checked_at };
  });
}
