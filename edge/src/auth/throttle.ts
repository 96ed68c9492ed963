/**
 * Login throttling in D1 so every Worker isolate sees the same counts. A key is either an
 * account (lower-cased username, whether or not it exists, so lockouts do not reveal which
 * accounts exist) or a client address. After `maxFailures` failures inside `windowMs` the key
 * is locked for `lockMs`; while locked every attempt is refused before the password is looked
 * at, so a correct password does not help.
 */
export interface ThrottleRule {
  maxFailures: number;
  windowMs: number;
  lockMs: number;
}

const MINUTE = 60_000;
export const ACCOUNT_RULE: ThrottleRule = { maxFailures: 5, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE };
// Higher than the account rule: many people can share one address (offices, NAT).
export const ADDRESS_RULE: ThrottleRule = { maxFailures: 20, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE };

export interface ThrottleKey {
  key: string;
  rule: ThrottleRule;
}

export function loginThrottleKeys(username: string, address: string): ThrottleKey[] {
  return [
    { key: `account:${username.toLowerCase()}`, rule: ACCOUNT_RULE },
    { key: `address:${address}`, rule: ADDRESS_RULE },
  ];
}

export type LockState = { locked: false } | { locked: true; retryAfterSeconds: number };

function lockState(lockedUntil: Array<number | null>, now: number): LockState {
  const until = Math.max(0, ...lockedUntil.map((u) => u ?? 0));
  if (until <= now) return { locked: false };
  return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
}

export async function checkLock(db: D1Database, keys: ThrottleKey[], now: number): Promise<LockState> {
  const placeholders = keys.map(() => '?').join(', ');
  const { results } = await db
    .prepare(`SELECT locked_until FROM login_throttle WHERE key IN (${placeholders})`)
    .bind(...keys.map((k) => k.key))
    .all<{ locked_until: number | null }>();
  return lockState(
    results.map((r) => r.locked_until),
    now,
  );
}

// One atomic upsert per key: concurrent failures cannot both read a stale count. In SQLite's
// UPDATE, column names on the right-hand side are the row's values before the update.
const RECORD_FAILURE_SQL = `
INSERT INTO login_throttle (key, failures, window_started_at, locked_until)
VALUES (?1, 1, ?2, CASE WHEN ?3 <= 1 THEN ?2 + ?4 ELSE NULL END)
ON CONFLICT(key) DO UPDATE SET
  failures = CASE WHEN window_started_at <= ?2 - ?5 THEN 1 ELSE failures + 1 END,
  window_started_at = CASE WHEN window_started_at <= ?2 - ?5 THEN ?2 ELSE window_started_at END,
  locked_until = CASE
    WHEN (CASE WHEN window_started_at <= ?2 - ?5 THEN 1 ELSE failures + 1 END) >= ?3 THEN ?2 + ?4
    ELSE locked_until END
RETURNING locked_until`;

/** Counts one failed login against every key; says whether that failure started a lockout. */
export async function recordFailure(db: D1Database, keys: ThrottleKey[], now: number): Promise<LockState> {
  const results = await db.batch<{ locked_until: number | null }>(
    keys.map((k) =>
      db.prepare(RECORD_FAILURE_SQL).bind(k.key, now, k.rule.maxFailures, k.rule.lockMs, k.rule.windowMs),
    ),
  );
  return lockState(
    results.flatMap((r) => r.results.map((row) => row.locked_until)),
    now,
  );
}

/**
 * A successful login forgives the account's failures. The address counter is left alone:
 * otherwise an attacker holding any valid account could reset it between guesses.
 */
export async function clearAccount(db: D1Database, keys: ThrottleKey[]): Promise<void> {
  const account = keys.find((k) => k.key.startsWith('account:'));
  if (account === undefined) return;
  await db.prepare('DELETE FROM login_throttle WHERE key = ?').bind(account.key).run();
}
