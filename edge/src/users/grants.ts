import type { UpdateUser } from './schemas.ts';
import type { UserRow } from './store.ts';

/**
 * What a change to an account gives that the account did not have: a password someone now knows,
 * the admin role, the ability to sign in again. Such a change needs the acting admin's login
 * session and password (like minting an API token): otherwise a leaked admin API token or a
 * stolen session cookie could make itself a credential that outlives it. Changes that only take
 * access away (demote, disable) need neither, so a script can still lock an account out.
 */
export type Grant = 'password' | 'role' | 'disabled';

export function grantsOf(current: Pick<UserRow, 'role' | 'disabled'>, patch: UpdateUser): Grant[] {
  const grants: Grant[] = [];
  if (patch.password !== undefined) grants.push('password');
  if (patch.role === 'admin' && current.role !== 'admin') grants.push('role');
  if (patch.disabled === false && current.disabled !== 0) grants.push('disabled');
  return grants;
}

const WHAT: Record<Grant, string> = {
  password: 'setting a password',
  role: 'making an admin',
  disabled: 'enabling an account',
};

/** How the refusal names the action, e.g. "setting a password and making an admin". */
export function describeGrants(grants: readonly Grant[]): string {
  const words = grants.map((g) => WHAT[g]);
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}
