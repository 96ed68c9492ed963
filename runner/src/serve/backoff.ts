/**
 * Reconnect delay for attempt n (0-based): exponential with "equal jitter" —
 * half the window fixed, half random — so a hub restart does not see every
 * runner return in the same millisecond, yet no runner retries instantly.
 */
export function backoffDelay(
  attempt: number,
  opts: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const window = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(window / 2 + random() * (window / 2));
}
