/** The admin caps on live runners (settings `maxLiveRunnersPerUser`, `maxLiveRunners`). */
export interface RunnerCaps {
  perUser: number;
  total: number;
}

type SlotClaim = { ok: true } | { ok: false; limit: 'maxLiveRunnersPerUser' | 'maxLiveRunners'; cap: number };

// A slot is reclaimed from a session that D1 shows at rest this long after the claim: the hub
// that held it was lost before giving it back. Live launches show a live state within
// milliseconds of the claim (the hub mirrors its state right after it).
const LEAKED_AFTER_MS = 60_000;

/**
 * Claims a runner slot for `sessionId` if the user and everyone together are under the caps.
 * The counting and the insert are one statement, and D1 runs statements one at a time, so
 * parallel claims cannot all see room for themselves.
 */
export async function claimRunnerSlot(
  db: D1Database,
  opts: { sessionId: string; userId: string; now: number; caps: RunnerCaps },
): Promise<SlotClaim> {
  const [, inserted, counts] = await db.batch<{ session_id?: string; mine?: number; total?: number }>([
    // This session has no launch (that is why it is claiming), so a slot it still holds is
    // stale; so is one of a session at rest since long after its claim.
    db
      .prepare(
        `DELETE FROM runner_slots WHERE session_id = ?1
           OR (claimed_at < ?2 AND session_id IN (SELECT id FROM sessions WHERE state IN ('stopped', 'failed')))`,
      )
      .bind(opts.sessionId, opts.now - LEAKED_AFTER_MS),
    db
      .prepare(
        `INSERT INTO runner_slots (session_id, user_id, claimed_at)
         SELECT ?1, ?2, ?3
         WHERE (SELECT count(*) FROM runner_slots WHERE user_id = ?2) < ?4
           AND (SELECT count(*) FROM runner_slots) < ?5
         RETURNING session_id`,
      )
      .bind(opts.sessionId, opts.userId, opts.now, opts.caps.perUser, opts.caps.total),
    db
      .prepare(
        'SELECT (SELECT count(*) FROM runner_slots WHERE user_id = ?) AS mine, (SELECT count(*) FROM runner_slots) AS total',
      )
      .bind(opts.userId),
  ]);
  if (inserted?.results[0]?.session_id === opts.sessionId) return { ok: true };
  const mine = counts?.results[0]?.mine ?? 0;
  if (mine >= opts.caps.perUser) return { ok: false, limit: 'maxLiveRunnersPerUser', cap: opts.caps.perUser };
  return { ok: false, limit: 'maxLiveRunners', cap: opts.caps.total };
}

export function releaseRunnerSlotStatement(db: D1Database, sessionId: string): D1PreparedStatement {
  return db.prepare('DELETE FROM runner_slots WHERE session_id = ?').bind(sessionId);
}
