import { describe, expect, it } from 'vitest';
import { REHEARSALS, rehearseParsers } from '../../src/pool/rehearse-parsers.ts';

describe('the parsers a pooled runner rehearses while it waits', () => {
  it('every sample is a frame its schema accepts, so the path a real frame takes is the one set up', () => {
    for (const r of REHEARSALS) expect(r.schema.safeParse(r.sample).success, r.name).toBe(true);
    expect(rehearseParsers()).toEqual([]);
  });

  it('a sample its schema refuses is named', () => {
    const broken = REHEARSALS.map((r) => (r.name === 'welcome' ? { ...r, sample: { type: 'welcome' } } : r));
    expect(rehearseParsers(broken)).toEqual(['welcome']);
  });
});
