import { describe, expect, it } from 'vitest';
import { pendingRepository } from '../../src/hub/pending-repository.ts';

describe('pendingRepository (what welcome.repository carries)', () => {
  const repository = { url: 'https://git.example.org/r.git', ref: 'v1' };
  it('is the session repository until its clone is committed as the baseline, then nothing', () => {
    expect(pendingRepository({ repository }, false)).toEqual(repository);
    expect(pendingRepository({ repository }, true)).toBeUndefined();
    expect(pendingRepository({}, false)).toBeUndefined();
  });
  it('drops a stored value the contract no longer accepts rather than sending it to a runner', () => {
    expect(pendingRepository({ repository: { url: 'file:///etc' } }, false)).toBeUndefined();
  });
});
