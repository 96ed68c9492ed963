// Runs in workerd and in Node (scripts/admin-create.ts clears an account's locks), so no bindings.

/** Throttle key of one account from one address; JSON keeps the parts apart whatever a login name holds. */
export function pairKey(account: string, address: string): string {
  return `pair:${JSON.stringify([account, address])}`;
}

/** Prefix shared by every pair key of one account. */
export function pairKeyPrefix(account: string): string {
  return `pair:[${JSON.stringify(account)},`;
}
