import type { Context } from 'hono';
import { clientAddress } from '../client-address.ts';
import type { AppDeps, AppEnv } from '../context.ts';
import type { ErrorCode } from '../errors.ts';
import { newId } from '../ids.ts';
import { findUserById } from '../users/store.ts';
import { loginIdentity, loginThrottleKeys, reserveAttempt, settleSuccess } from './throttle.ts';

/**
 * Re-authentication for sensitive actions (minting an API token, changing one's password, an
 * admin granting access to an account): the caller must hold a login session, not an API token (a
 * leaked API token must not mint more credentials), and prove the current password. Guesses here
 * go through the login throttle (pair and address keys), so a stolen session cookie is no faster a
 * password oracle than the login form.
 * Returns the password hash the password was checked against when the caller passed (what the
 * route then acts on must still be the account with that hash), otherwise the refusal (the route
 * answers it with `apiError`; `Retry-After` is already set on a 429).
 */
interface Refusal {
  status: 400 | 401 | 403 | 429;
  code: ErrorCode;
  message: string;
  field?: string;
}

const TOO_MANY: Refusal = {
  status: 429,
  code: 'rate_limited',
  message: 'currentPassword: too many wrong passwords; try again later',
  field: 'currentPassword',
};

export async function requireCurrentPassword(
  c: Context<AppEnv>,
  deps: AppDeps,
  currentPassword: string | undefined,
  action: string,
): Promise<{ refused: Refusal } | { passwordHash: string }> {
  const auth = c.get('auth');
  if (auth.kind !== 'session') {
    return {
      refused: { status: 403, code: 'forbidden', message: `${action} needs a login session, not an API token` },
    };
  }
  if (currentPassword === undefined) {
    return {
      refused: {
        status: 400,
        code: 'invalid_request',
        message: `currentPassword: required for ${action}: the password of the signed-in user`,
        field: 'currentPassword',
      },
    };
  }
  const db = c.env.DB;
  const now = deps.clock();
  const user = await findUserById(db, auth.user.id);
  if (user === null)
    return { refused: { status: 401, code: 'unauthenticated', message: 'invalid, expired or revoked token' } };
  const id = loginIdentity(user.username, clientAddress(c));
  // The caller is already signed in, so the account-wide key (strangers) does not apply.
  const keys = loginThrottleKeys(id, true);
  const reservation = await reserveAttempt(db, keys, newId(now), now);
  if (!reservation.allowed) {
    c.header('Retry-After', String(reservation.retryAfterSeconds));
    return { refused: TOO_MANY };
  }
  if (!(await deps.verifyPassword(currentPassword, user.password_hash))) {
    if (reservation.lockedBy !== null) {
      c.header('Retry-After', String(reservation.lockedBy.retryAfterSeconds));
      return { refused: TOO_MANY };
    }
    return {
      refused: {
        status: 403,
        code: 'invalid_credentials',
        message: 'currentPassword: wrong password',
        field: 'currentPassword',
      },
    };
  }
  await settleSuccess(db, id, keys, now);
  return { passwordHash: user.password_hash };
}
