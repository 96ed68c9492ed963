import { describe, expect, it } from 'vitest';
import { pendingRepository } from '../../src/hub/pending-repository.ts';

describe('pendingRepository (what welcome.repository carries)', () => {
  const repository = { url: 'https://git.example.org/r.git', ref: 'v1' };
  it('is the session repository until its clone is committed as the baseline, then nothing', () => {
    expect(pendingRepository({ repository }, false)).toEqual({ ok: true, value: repository });
    expect(pendingRepository({ repository }, true)).toEqual({ ok: true, value: undefined });
    expect(pendingRepository({}, false)).toEqual({ ok: true, value: undefined });
  });
  it('refuses a stored value the contract no longer accepts, naming the field, rather than starting without it', () => {
    const r = pendingRepository({ repository: { url: 'file:///etc' } }, false);
    expect(r).toMatchObject({ ok: false, error: { code: 'repository_clone_failed', retryable: false } });
    expect(r.ok || r.error.message).toMatch(/^repository\.url: /);
    // Once a clone is committed nothing is cloned, so nothing is checked.
    expect(pendingRepository({ repository: { url: 'file:///etc' } }, true)).toEqual({ ok: true, value: undefined });
  });
});
