import { describe, expect, it } from 'vitest';
import { bearerToken } from '../src/index.ts';

describe('bearerToken', () => {
  it('reads the token of a bearer header, case-insensitive scheme, trailing spaces allowed', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
  });
  it('is undefined for a missing, empty or other-scheme header', () => {
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken('')).toBeUndefined();
    expect(bearerToken('Bearer ')).toBeUndefined();
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
  });
});
