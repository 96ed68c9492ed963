/** A fixed-window counter: at most `max` hits per `windowMs` for one key. */
export interface RateRule {
  max: number;
  windowMs: number;
}

type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * Counts one hit and says whether it is within the rule, in one statement (parallel hits cannot
 * all read a count from before any of them). A refused hit is counted too, which only lengthens
 * nothing: the window still ends when it started plus `windowMs`.
 */
export async function hit(db: D1Database, key: string, rule: RateRule, now: number): Promise<RateVerdict> {
  const row = await db
    .prepare(
      `INSERT INTO rate_limits (key, count, window_started_at) VALUES (?1, 1, ?2)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN window_started_at <= ?2 - ?3 THEN 1 ELSE count + 1 END,
         window_started_at = CASE WHEN window_started_at <= ?2 - ?3 THEN ?2 ELSE window_started_at END
       RETURNING count, window_started_at`,
    )
    .bind(key, now, rule.windowMs)
    .first<{ count: number; window_started_at: number }>();
  if (row === null || row.count <= rule.max) return { ok: true };
  return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((row.window_started_at + rule.windowMs - now) / 1000)) };
}
