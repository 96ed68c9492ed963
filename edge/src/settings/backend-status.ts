import { BackendSchema, type Backend } from '@switchyard/protocol';
import { runProbe, type BackendProbe, type ProbeResult } from './backend-probe.ts';

export interface BackendStatus extends ProbeResult {
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

export async function saveStatus(db: D1Database, name: Backend, result: ProbeResult, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO backend_status (name, available, version, reason, fix, checked_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET available = excluded.available, version = excluded.version,
         reason = excluded.reason, fix = excluded.fix, checked_at = excluded.checked_at`,
    )
    .bind(name, result.available ? 1 : 0, result.version ?? null, result.reason ?? null, result.fix ?? null, now)
    .run();
}

/** Probes `backend` now (no cache) and remembers the answer for readers of /api/settings. */
export async function probeFresh(
  db: D1Database,
  probe: BackendProbe,
  backend: Backend,
  opts: { now: number; timeoutMs: number },
): Promise<ProbeResult> {
  const result = await runProbe(probe, backend, opts.timeoutMs);
  await saveStatus(db, backend, result, opts.now);
  return result;
}

/**
 * Every backend's status, re-probing those whose stored answer is older than `ttlMs`. Stored in
 * D1 rather than memory so all isolates share one answer and a page load rarely waits on a probe.
 */
export async function allStatuses(
  db: D1Database,
  probe: BackendProbe,
  opts: { now: number; ttlMs: number; timeoutMs: number },
): Promise<BackendStatus[]> {
  const { results } = await db
    .prepare('SELECT name, available, version, reason, fix, checked_at FROM backend_status')
    .all<StatusRow>();
  const byName = new Map(results.map((r) => [r.name, r]));
  return Promise.all(
    BackendSchema.options.map(async (name) => {
      const row = byName.get(name);
      if (row !== undefined && opts.now - row.checked_at < opts.ttlMs) return fromRow(row);
      return { name, ...(await probeFresh(db, probe, name, opts)) };
    }),
  );
}
