/**
 * Compares two byte strings in time that depends only on their length, never on where they
 * first differ, so a network observer cannot learn a stored hash byte by byte. Lengths are not
 * secret here: callers compare fixed-size digests.
 */
export function constantTimeEqual(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}
