import { describe, expect, it } from 'vitest';
import { nothingToRestore } from '../../src/pool/claim.ts';
import { nextPoolDeadline, pickForClaim, planPool, type PooledRunner, type PoolTarget } from '../../src/pool/plan.ts';

const target = (over: Partial<PoolTarget> = {}): PoolTarget => ({
  sizes: { claude: 2, pi: 1 },
  llmBackend: 'claude',
  models: { claude: null, pi: null },
  maxAgeMs: 60_000,
  connectTimeoutMs: 10_000,
  ...over,
});

const runner = (id: string, over: Partial<PooledRunner> = {}): PooledRunner => ({
  id,
  backend: 'claude',
  model: null,
  ref: `task-${id}`,
  launchedAt: 1000,
  state: 'idle',
  ...over,
});

describe('planPool', () => {
  it('fills an empty pool of the current backend only', () => {
    const plan = planPool([], target(), 1000);
    expect(plan.retire).toEqual([]);
    expect(plan.launch).toEqual([
      { backend: 'claude', model: null },
      { backend: 'claude', model: null },
    ]);
  });

  it('size 0 launches nothing and retires what is there', () => {
    const plan = planPool([runner('a')], target({ sizes: { claude: 0, pi: 0 } }), 1000);
    expect(plan.launch).toEqual([]);
    expect(plan.retire).toEqual([{ id: 'a', reason: 'drained' }]);
  });

  it('a backend switch drains the old backend and fills the new one', () => {
    const plan = planPool([runner('a'), runner('b')], target({ llmBackend: 'pi' }), 1000);
    expect(plan.retire.map((r) => r.reason)).toEqual(['drained', 'drained']);
    expect(plan.launch).toEqual([{ backend: 'pi', model: null }]);
  });

  it('an aged runner stays until its replacement is idle; a launch that never connected is given up', () => {
    const old = runner('old', { launchedAt: 0 });
    const young = runner('young', { launchedAt: 55_000 });
    const runners = [old, runner('slow', { state: 'launching', launchedAt: 50_000 }), young];
    // At 60 s "old" is past the age limit: a replacement is launched, "old" still stands in.
    const plan = planPool(runners, target(), 60_000);
    expect(plan.retire).toEqual([{ id: 'slow', reason: 'never_connected' }]);
    expect(plan.launch).toEqual([{ backend: 'claude', model: null }]);
    // The replacement starting is not enough; once it is idle, "old" goes.
    const starting = [old, young, runner('new', { state: 'launching', launchedAt: 60_000 })];
    expect(planPool(starting, target(), 61_000)).toEqual({ launch: [], retire: [] });
    const ready = [old, young, runner('new', { launchedAt: 60_000 })];
    expect(planPool(ready, target(), 62_000)).toEqual({ launch: [], retire: [{ id: 'old', reason: 'aged' }] });
  });

  it('an aged runner whose replacement never came goes after one more connect timeout', () => {
    const plan = planPool(
      [runner('old', { launchedAt: 0 }), runner('young', { launchedAt: 65_000 })],
      target(),
      70_000,
    );
    expect(plan.retire).toEqual([{ id: 'old', reason: 'aged' }]);
    expect(plan.launch).toHaveLength(1);
  });

  it('a new default model replaces the pooled runners started with the old one', () => {
    const plan = planPool([runner('a')], target({ models: { claude: 'm2', pi: null } }), 1000);
    expect(plan.retire).toEqual([{ id: 'a', reason: 'model_changed' }]);
    expect(plan.launch).toEqual([
      { backend: 'claude', model: 'm2' },
      { backend: 'claude', model: 'm2' },
    ]);
  });

  it('a lowered size retires the youngest, keeping the oldest for the next claims', () => {
    const runners = [
      runner('y', { launchedAt: 3000 }),
      runner('o', { launchedAt: 1000 }),
      runner('m', { launchedAt: 2000 }),
    ];
    const plan = planPool(runners, target({ sizes: { claude: 1, pi: 0 } }), 4000);
    expect(plan.retire).toEqual([
      { id: 'm', reason: 'over_size' },
      { id: 'y', reason: 'over_size' },
    ]);
    expect(plan.launch).toEqual([]);
  });

  it('launching runners count toward the size (no double launch while they start)', () => {
    const plan = planPool([runner('a', { state: 'launching', ref: null }), runner('b')], target(), 1000);
    expect(plan).toEqual({ launch: [], retire: [] });
  });
});

describe('pickForClaim', () => {
  it('hands out the oldest idle runner of the same backend and model', () => {
    const runners = [
      runner('young', { launchedAt: 2000 }),
      runner('old', { launchedAt: 1000 }),
      runner('starting', { state: 'launching', launchedAt: 500 }),
      runner('pi', { backend: 'pi', launchedAt: 100 }),
      runner('other-model', { model: 'x', launchedAt: 100 }),
    ];
    expect(pickForClaim(runners, { backend: 'claude', model: null }, target(), 3000)?.id).toBe('old');
  });

  it('an aged runner waiting for its replacement is still handed out (before a fresh one)', () => {
    const runners = [runner('fresh', { launchedAt: 50_000 }), runner('aged', { launchedAt: 0 })];
    expect(pickForClaim(runners, { backend: 'claude', model: null }, target(), 65_000)?.id).toBe('aged');
  });

  it('nothing fits: null (launch cold)', () => {
    expect(pickForClaim([], { backend: 'claude', model: null }, target(), 0)).toBeNull();
    expect(
      pickForClaim([runner('a', { launchedAt: 0 })], { backend: 'claude', model: null }, target(), 70_000),
    ).toBeNull();
    expect(pickForClaim([runner('a')], { backend: 'claude', model: 'other' }, target(), 1000)).toBeNull();
  });
});

describe('nextPoolDeadline', () => {
  it('is the earliest age or connect deadline', () => {
    const runners = [runner('a', { launchedAt: 1000 }), runner('b', { state: 'launching', launchedAt: 5000 })];
    expect(nextPoolDeadline(runners, target(), 2000)).toBe(15_000);
    expect(nextPoolDeadline([], target(), 0)).toBeNull();
    // Past the age limit: the next look is at the hard limit (age limit + connect timeout).
    expect(nextPoolDeadline([runner('a', { launchedAt: 0 })], target(), 60_000)).toBe(70_000);
  });
});

describe('nothingToRestore', () => {
  const session = { id: 's', userId: 'u', backend: 'claude' as const, title: null, createdAt: 0 };
  it('only a session with no transcript, no workspace files, no repository and approvals auto', () => {
    expect(nothingToRestore({ session, transcript: null }, true)).toBe(true);
    expect(nothingToRestore({ session: { ...session, approvals: 'ask' }, transcript: null }, true)).toBe(false);
    const transcript = { key: 'k', sha256: 'x', bytes: 1, resumeId: 'r', storedAt: 0 };
    expect(nothingToRestore({ session, transcript }, true)).toBe(false);
    expect(nothingToRestore({ session, transcript: null }, false)).toBe(false);
    expect(nothingToRestore({ session: null, transcript: null }, true)).toBe(false);
    const repository = { url: 'https://git.example.org/r.git' };
    expect(nothingToRestore({ session: { ...session, repository }, transcript: null }, true)).toBe(false);
  });
});
