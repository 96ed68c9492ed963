import { describe, expect, test } from 'vitest';
import { nextUlid, ulidTime } from '../../src/hub/ulid.ts';

describe('ulidTime', () => {
  test('reads back the time an id was made at', () => {
    for (const t of [0, 1, 1_700_000_000_123, Date.UTC(2026, 11, 4, 18, 20, 0, 7), 2 ** 48 - 1]) {
      expect(ulidTime(nextUlid(t, null))).toBe(t);
    }
  });

  test('an id made within the last id keeps that id’s time', () => {
    const last = nextUlid(1_700_000_000_500, null);
    expect(ulidTime(nextUlid(1_700_000_000_000, last))).toBe(1_700_000_000_500);
  });
});
