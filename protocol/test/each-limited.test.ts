import { describe, expect, it } from 'vitest';
import { eachLimited } from '../src/index.ts';

describe('eachLimited', () => {
  it('calls fn once per item with at most `limit` in flight', async () => {
    const items = Array.from({ length: 20 }, (_, i) => i);
    const seen: number[] = [];
    let inFlight = 0;
    let peak = 0;
    await eachLimited(items, 3, async (i) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      // Yield so the other workers get to start before this call ends.
      await Promise.resolve();
      await Promise.resolve();
      seen.push(i);
      inFlight -= 1;
    });
    expect(peak).toBe(3);
    expect([...seen].sort((a, b) => a - b)).toEqual(items);
  });

  it('resolves at once for no items, and starts no more workers than items', async () => {
    await eachLimited([], 4, () => Promise.reject(new Error('never called')));
    let peak = 0;
    let inFlight = 0;
    await eachLimited([1, 2], 8, async () => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await Promise.resolve();
      inFlight -= 1;
    });
    expect(peak).toBe(2);
  });

  it('rejects with the first failure', async () => {
    await expect(
      eachLimited([1, 2, 3], 2, async (i) => {
        if (i === 2) throw new Error('item 2 failed');
      }),
    ).rejects.toThrow('item 2 failed');
  });
});
