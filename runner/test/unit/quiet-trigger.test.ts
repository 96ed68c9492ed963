import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { QuietTrigger } from '../../src/serve/quiet-trigger.ts';

// The wait before a turn's heap compaction (docs/DESIGN.md "Runner memory" → "Between turns"):
// fake timers, and the trigger's clock is the faked Date.

describe('QuietTrigger', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function trigger() {
    const runs: number[] = [];
    const t = new QuietTrigger(
      1000,
      () => runs.push(Date.now()),
      () => Date.now(),
    );
    return { t, runs };
  }

  test('no input yet: armed, it runs at once', () => {
    const { t, runs } = trigger();
    vi.setSystemTime(5000);
    t.arm();
    expect(runs).toEqual([5000]);
  });

  test('armed 300 ms after an input: it runs a second after that input, once', () => {
    const { t, runs } = trigger();
    t.input();
    vi.advanceTimersByTime(300);
    t.arm();
    vi.advanceTimersByTime(699);
    expect(runs).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(runs).toEqual([1000]);
    vi.advanceTimersByTime(10_000);
    expect(runs).toEqual([1000]);
  });

  test('an input while it waits starts the quiet over', () => {
    const { t, runs } = trigger();
    t.input();
    t.arm();
    vi.advanceTimersByTime(900);
    t.input();
    vi.advanceTimersByTime(999);
    expect(runs).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(runs).toEqual([1900]);
  });

  test('armed again while it waits: still one run; armed after it ran: another', () => {
    const { t, runs } = trigger();
    t.input();
    t.arm();
    vi.advanceTimersByTime(500);
    t.arm();
    vi.advanceTimersByTime(2000);
    expect(runs).toEqual([1000]);
    t.input();
    t.arm();
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual([1000, 3500]);
  });
});
