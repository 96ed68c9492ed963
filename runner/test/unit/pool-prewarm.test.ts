import { describe, expect, test } from 'vitest';
import { claimedConfig, firstMessageInputs, forgetPoolSecrets, poolModeOf } from '../../src/pool/pooled.ts';
import { TurnMachine, type MachineEffect } from '../../src/serve/turn-machine.ts';
import { TIMINGS as T } from './turn-machine-fixtures.ts';

// Pooled mode's pure parts (docs/DESIGN.md "Warm runner pool"): the turn machine starts the CLI
// on `prewarm` and does not start a second one when the claimed session links; the pooled
// runner's config stands in for a session until the claim and is validated again with it.

const spawns = (fx: MachineEffect[]) => fx.filter((e) => e.type === 'spawn_cli');

describe('turn machine: prewarm', () => {
  test('prewarm spawns the CLI before the link; linked spawns no second one and starts the idle clock', () => {
    const m = new TurnMachine(T);
    const pre = m.handle({ type: 'prewarm' });
    expect(spawns(pre)).toEqual([{ type: 'spawn_cli', gen: 1 }]);
    const ready = m.handle({ type: 'cli_ready', gen: 1 });
    // Still no session: the status says the runner is starting, with its CLI running.
    expect(ready.filter((e) => e.type === 'status')).toEqual([
      { type: 'status', status: { type: 'status', state: 'starting', cli: 'running' } },
    ]);
    expect(ready.some((e) => e.type === 'set_timer' && e.name === 'idle')).toBe(false);
    m.handle({ type: 'start' });
    const linked = m.handle({ type: 'linked' });
    expect(spawns(linked)).toEqual([]);
    expect(linked.some((e) => e.type === 'set_timer' && e.name === 'idle')).toBe(true);
    // The first message goes to the prewarmed CLI.
    const fx = m.handle({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    expect(spawns(fx)).toEqual([]);
    expect(fx).toContainEqual({ type: 'write_message', gen: 1, message: { text: 'hi' } });
  });

  test('a first message from the claim reaches the prewarmed CLI before the welcome; the hub copy is a duplicate', () => {
    const m = new TurnMachine(T);
    m.handle({ type: 'prewarm' });
    m.handle({ type: 'cli_ready', gen: 1 });
    m.handle({ type: 'start' });
    const first = { messageId: 'm1', message: { text: 'hi' } };
    const fx = firstMessageInputs(first).flatMap((input) => m.handle(input));
    expect(spawns(fx)).toEqual([]);
    expect(fx).toContainEqual({ type: 'accepted', inReplyTo: 'm1' });
    expect(fx).toContainEqual({ type: 'write_message', gen: 1, message: { text: 'hi' } });
    // The welcome, then the hub's copy of the same message: answered, never written twice.
    expect(spawns(m.handle({ type: 'linked' }))).toEqual([]);
    const again = m.handle({ type: 'user_message', ...first });
    expect(again).toEqual([{ type: 'accepted', inReplyTo: 'm1', duplicate: true }]);
  });

  test('prewarm twice or after linking starts nothing more', () => {
    const m = new TurnMachine(T);
    m.handle({ type: 'prewarm' });
    expect(spawns(m.handle({ type: 'prewarm' }))).toEqual([]);
    const plain = new TurnMachine(T);
    plain.handle({ type: 'start' });
    expect(spawns(plain.handle({ type: 'linked' }))).toHaveLength(1);
    expect(spawns(plain.handle({ type: 'prewarm' }))).toEqual([]);
  });
});

describe('pooled config', () => {
  const env = {
    SWITCHYARD_POOL_URL: 'ws://127.0.0.1:8787/internal/runner/pool',
    SWITCHYARD_POOL_TOKEN: 'syr1.pool.token',
    SWITCHYARD_BACKEND: 'claude',
    SWITCHYARD_RUNNER_ID: 'pool-runner-1',
    SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9/v1',
  };

  test('no pool URL: an ordinary launch', () => {
    expect(poolModeOf({ SWITCHYARD_BACKEND: 'claude' })).toBeNull();
  });

  test('the claim becomes a session config checked by the same rules; the pool secrets leave the env', () => {
    const pool = poolModeOf(env);
    if (pool === null) throw new Error('expected pooled mode');
    const claimed = claimedConfig(
      pool,
      { hubUrl: 'ws://127.0.0.1:8787/internal/runner/connect', sessionId: 'S1', runnerToken: 'syr1.session.token' },
      '/tmp',
    );
    expect(claimed.ok && claimed.value).toMatchObject({
      hubUrl: 'ws://127.0.0.1:8787/internal/runner/connect',
      sessionId: 'S1',
      runnerToken: 'syr1.session.token',
      runnerId: 'pool-runner-1',
      backend: 'claude',
    });
    // A claim pointing a runner at plain ws:// off loopback is refused like a launch would be.
    const remote = claimedConfig(pool, { hubUrl: 'ws://example.test/x', sessionId: 'S1', runnerToken: 't' }, '/tmp');
    expect(remote.ok).toBe(false);
    const copy: Record<string, string | undefined> = { ...env };
    forgetPoolSecrets(copy);
    expect(copy.SWITCHYARD_POOL_TOKEN).toBeUndefined();
    expect(copy.SWITCHYARD_POOL_URL).toBeUndefined();
  });
});
