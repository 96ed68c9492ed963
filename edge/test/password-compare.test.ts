import { describe, expect, it, vi } from 'vitest';
import { constantTimeEqual } from '../src/auth/constant-time.ts';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../src/auth/password.ts';

describe('verifyPassword', () => {
  it('decides through the constant-time comparison for right, wrong and unknown-user checks alike', async () => {
    const stored = await hashPassword('the right password');
    const compare = vi.fn(constantTimeEqual);
    expect(await verifyPassword('the right password', stored, compare)).toBe(true);
    expect(await verifyPassword('a wrong password', stored, compare)).toBe(false);
    expect(await verifyPassword('anything', DUMMY_PASSWORD_HASH, compare)).toBe(false);
    expect(compare).toHaveBeenCalledTimes(3);
    expect(compare.mock.results.map((r) => r.value)).toEqual([true, false, false]);
    // Whole digests are compared, never prefixes or encodings of them.
    for (const [a, b] of compare.mock.calls) {
      expect(a).toBeInstanceOf(Uint8Array);
      expect([a.length, b.length]).toEqual([32, 32]);
    }
  });
});
