/**
 * Login throttling in D1 so every Worker isolate sees the same counts.
 *
 * Every attempt is *reserved* before the password is looked at: one D1 batch (a transaction, so
 * nothing interleaves with it) decides whether the attempt may proceed and, if so, counts it as a
 * failure against every key. The PBKDF2 check only runs for a reserved attempt; a success gives
 * the reservation back. So N parallel guesses cannot all pass a check that ran before any of
 * them was counted: at most `maxFailures` of them are ever evaluated.
 *
 * Keys, each with its own rule:
 * - `pair:` one account from one address — what a single guesser hits first;
 * - `address:` one client address across accounts (password spraying);
 * - `account:` one account from addresses it has never logged in from. A familiar address (one
 *   with a successful login for this account in the last `FAMILIAR_MS`) is exempt from this key,
 *   like the "familiar location" of Microsoft Entra smart lockout: a stranger can lock the account
 *   for strangers, never for its owner on a machine they have used before.
 *
 * Accounts are lower-cased names, whether or not they exist, so lockouts do not reveal which
 * accounts exist.
 */
import { pairKey } from './throttle-keys.ts';

interface ThrottleRule {
  maxFailures: number;
  windowMs: number;
  lockMs: number;
}

const MINUTE = 60_000;
export const PAIR_RULE: ThrottleRule = { maxFailures: 5, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE };
// Higher than the pair rule: a distributed guesser spreads over addresses, the owner is exempt.
export const ACCOUNT_RULE: ThrottleRule = { maxFailures: 10, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE };
// Higher still: many people can share one address (offices, NAT).
export const ADDRESS_RULE: ThrottleRule = { maxFailures: 20, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE };
const FAMILIAR_MS = 30 * 24 * 60 * MINUTE;

interface ThrottleKey {
  key: string;
  rule: ThrottleRule;
}

interface LoginIdentity {
  account: string;
  address: string;
}

export function loginIdentity(username: string, address: string): LoginIdentity {
  return { account: username.toLowerCase(), address };
}

export function loginThrottleKeys(id: LoginIdentity, familiar: boolean): ThrottleKey[] {
  const keys = [
    { key: pairKey(id.account, id.address), rule: PAIR_RULE },
    { key: `address:${id.address}`, rule: ADDRESS_RULE },
  ];
  if (!familiar) keys.push({ key: `account:${id.account}`, rule: ACCOUNT_RULE });
  return keys;
}

export async function isFamiliar(db: D1Database, id: LoginIdentity, now: number): Promise<boolean> {
  const row = await db
    .prepare('SELECT 1 AS ok FROM login_familiar WHERE account = ? AND address = ? AND last_success_at > ?')
    .bind(id.account, id.address, now - FAMILIAR_MS)
    .first<{ ok: number }>();
  return row !== null;
}

type Reservation =
  /** `lockedBy`: this attempt's own count reached a limit, so its failure already answers 429. */
  { allowed: true; lockedBy: { retryAfterSeconds: number } | null } | { allowed: false; retryAfterSeconds: number };

// Counts one attempt against a key, only if the gate row of this attempt says it may proceed
// (INSERT ... SELECT inserts nothing, and so updates nothing, when the WHERE is false). In
// SQLite's upsert, bare column names on the right-hand side are the row's values before it.
const COUNT_SQL = `
INSERT INTO login_throttle (key, failures, window_started_at, locked_until)
SELECT ?1, 1, ?2, CASE WHEN ?3 <= 1 THEN ?2 + ?4 ELSE NULL END
WHERE (SELECT allowed FROM login_attempt_gate WHERE id = ?6) = 1
ON CONFLICT(key) DO UPDATE SET
  failures = CASE WHEN window_started_at <= ?2 - ?5 THEN 1 ELSE failures + 1 END,
  window_started_at = CASE WHEN window_started_at <= ?2 - ?5 THEN ?2 ELSE window_started_at END,
  locked_until = CASE
    WHEN (CASE WHEN window_started_at <= ?2 - ?5 THEN 1 ELSE failures + 1 END) >= ?3 THEN ?2 + ?4
    ELSE locked_until END`;

/**
 * Decides and counts one login attempt atomically. Allowed only when no key is locked; then it
 * counts as a failure everywhere until `settleSuccess` gives it back.
 */
export async function reserveAttempt(
  db: D1Database,
  keys: ThrottleKey[],
  attemptId: string,
  now: number,
): Promise<Reservation> {
  const names = keys.map((k) => k.key);
  const inList = names.map(() => '?').join(', ');
  const results = await db.batch<{ allowed?: number; until?: number | null }>([
    db
      .prepare(
        `INSERT INTO login_attempt_gate (id, allowed)
         SELECT ?, NOT EXISTS (SELECT 1 FROM login_throttle WHERE key IN (${inList}) AND locked_until > ?)`,
      )
      .bind(attemptId, ...names, now),
    ...keys.map((k) =>
      db.prepare(COUNT_SQL).bind(k.key, now, k.rule.maxFailures, k.rule.lockMs, k.rule.windowMs, attemptId),
    ),
    db.prepare('DELETE FROM login_attempt_gate WHERE id = ? RETURNING allowed').bind(attemptId),
    db.prepare(`SELECT max(locked_until) AS until FROM login_throttle WHERE key IN (${inList})`).bind(...names),
  ]);
  const allowed = results.at(-2)?.results[0]?.allowed === 1;
  const until = results.at(-1)?.results[0]?.until ?? 0;
  const retryAfterSeconds = Math.max(1, Math.ceil((until - now) / 1000));
  if (!allowed) return { allowed: false, retryAfterSeconds };
  return { allowed: true, lockedBy: until > now ? { retryAfterSeconds } : null };
}

/**
 * A correct password: forgive the pair and account counts, give the address its reserved count
 * back (only that one — clearing it would let anyone holding a valid account reset it between
 * guesses), and remember the address as familiar for this account.
 */
export async function settleSuccess(
  db: D1Database,
  id: LoginIdentity,
  keys: ThrottleKey[],
  now: number,
): Promise<void> {
  const address = keys.find((k) => k.key.startsWith('address:'));
  await db.batch([
    db
      .prepare('DELETE FROM login_throttle WHERE key IN (?, ?)')
      .bind(pairKey(id.account, id.address), `account:${id.account}`),
    ...(address === undefined
      ? []
      : [
          db
            .prepare(
              `UPDATE login_throttle SET failures = max(failures - 1, 0),
                 locked_until = CASE WHEN failures - 1 < ? THEN NULL ELSE locked_until END
               WHERE key = ?`,
            )
            .bind(address.rule.maxFailures, address.key),
        ]),
    db
      .prepare(
        `INSERT INTO login_familiar (account, address, last_success_at) VALUES (?, ?, ?)
         ON CONFLICT(account, address) DO UPDATE SET last_success_at = excluded.last_success_at`,
      )
      .bind(id.account, id.address, now),
  ]);
}
