// The broker's keyring: which keys pass after a rotation, and how long a read is trusted. Pure
// policy and a cache over an injected read and clock.
import { describe, expect, it } from 'vitest';
import { acceptedKeys, brokerKeyring, KEY_CACHE_MS, type KeyVersions, PREVIOUS_KEY_GRACE_MS } from '../src/keyring.ts';

const T0 = Date.UTC(2026, 11, 7, 10, 0, 0);
const version = (value: string, createdAt: number) => ({ value, createdAt });

describe('acceptedKeys', () => {
  const rotated: KeyVersions = { current: version('new', T0), previous: version('old', T0 - 86_400_000) };

  it('the current key alone when the secret has no previous version', () => {
    expect(acceptedKeys({ current: version('only', T0), previous: null }, T0)).toEqual(['only']);
  });

  it('the previous key too, until the grace after the current one was made has passed', () => {
    expect(acceptedKeys(rotated, T0)).toEqual(['new', 'old']);
    expect(acceptedKeys(rotated, T0 + PREVIOUS_KEY_GRACE_MS - 1)).toEqual(['new', 'old']);
    expect(acceptedKeys(rotated, T0 + PREVIOUS_KEY_GRACE_MS)).toEqual(['new']);
  });
});

/** A keyring over a scripted read and a hand-moved clock. */
function harness(first: KeyVersions) {
  let now = T0;
  let next: KeyVersions | Error = first;
  const reads: number[] = [];
  const logged: string[] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const keys = brokerKeyring({
    now: () => now,
    log: (line) => logged.push(line),
    read: async () => {
      reads.push(now);
      if (hold) await new Promise<void>((r) => (release = r));
      if (next instanceof Error) throw next;
      return next;
    },
  });
  return {
    keys,
    reads,
    logged,
    advance: (ms: number) => (now += ms),
    answer: (v: KeyVersions | Error) => (next = v),
    holdReads: () => (hold = true),
    releaseRead: () => {
      hold = false;
      release?.();
    },
  };
}

describe('brokerKeyring', () => {
  const one: KeyVersions = { current: version('k1', T0 - 86_400_000), previous: null };
  const rotated: KeyVersions = { current: version('k2', T0 + 60_000), previous: version('k1', T0 - 86_400_000) };

  it('reads once, then trusts the read until it is KEY_CACHE_MS old; a rotation is seen after that', async () => {
    const h = harness(one);
    expect(await h.keys()).toEqual(['k1']);
    h.answer(rotated);
    h.advance(KEY_CACHE_MS - 1);
    expect(await h.keys()).toEqual(['k1']);
    expect(h.reads).toHaveLength(1);
    h.advance(1);
    expect(await h.keys()).toEqual(['k2', 'k1']);
    expect(h.reads).toHaveLength(2);
  });

  it('the previous key stops passing an hour after the rotation, with no new read needed to drop it', async () => {
    const h = harness(rotated);
    h.advance(60_000);
    expect(await h.keys()).toEqual(['k2', 'k1']);
    h.advance(PREVIOUS_KEY_GRACE_MS - 1);
    // A fresh read at this point says the same; what changed is only the clock.
    expect(await h.keys()).toEqual(['k2', 'k1']);
    h.advance(1);
    expect(await h.keys()).toEqual(['k2']);
  });

  it('concurrent requests while a read is on its way share it', async () => {
    const h = harness(one);
    h.holdReads();
    const waiting = [h.keys(), h.keys(), h.keys()];
    h.releaseRead();
    expect(await Promise.all(waiting)).toEqual([['k1'], ['k1'], ['k1']]);
    expect(h.reads).toHaveLength(1);
  });

  it('a first read that fails fails the request, and the next request reads again', async () => {
    const h = harness(one);
    h.answer(new Error('Secrets Manager GetSecretValue (AWSCURRENT) answered 500 (InternalServiceError)'));
    await expect(h.keys()).rejects.toThrow('answered 500');
    h.answer(one);
    expect(await h.keys()).toEqual(['k1']);
    expect(h.reads).toHaveLength(2);
  });

  it('a refresh that fails keeps the keys read before, says so, and the next request tries again', async () => {
    const h = harness(one);
    await h.keys();
    h.advance(KEY_CACHE_MS);
    h.answer(new Error('Secrets Manager GetSecretValue (AWSCURRENT) answered 500 (InternalServiceError)'));
    expect(await h.keys()).toEqual(['k1']);
    expect(h.logged).toEqual([
      'the broker key could not be read again, the keys read before stay: Secrets Manager GetSecretValue (AWSCURRENT) answered 500 (InternalServiceError)',
    ]);
    h.answer(rotated);
    expect(await h.keys()).toEqual(['k2', 'k1']);
    expect(h.reads).toHaveLength(3);
  });
});
