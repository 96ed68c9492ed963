import { describe, expect, it } from 'vitest';
import { presenceOf } from '../../src/hub/viewer-frames.ts';

describe('presenceOf', () => {
  it('counts streams per person, sorted by name', () => {
    expect(presenceOf(['bob', 'ada', 'bob'])).toEqual({
      viewers: [
        { name: 'ada', streams: 1 },
        { name: 'bob', streams: 2 },
      ],
    });
    expect(presenceOf([])).toEqual({ viewers: [] });
  });
});
