import { describe, expect, test } from 'vitest';
import { TurnMachine, type MachineEffect } from '../../src/serve/turn-machine.ts';
import { TIMINGS as T, effectsOf as of } from './turn-machine-fixtures.ts';

// The guard's self-test runs while a fresh session's CLI starts (docs/DESIGN.md "The guard"): the
// CLI may exist, but its input opens only once the self-test passed, it is not ready before, and a
// failed self-test kills it as if it had never started.

const lastStatus = (fx: MachineEffect[]) => of(fx, 'status').at(-1)?.status;

function startedPending(): { m: TurnMachine; fx: MachineEffect[] } {
  const m = new TurnMachine(T, 'pending');
  const fx = [...m.handle({ type: 'start' }), ...m.handle({ type: 'prewarm' })];
  return { m, fx };
}

describe('turn machine: the CLI starts while the guard self-test runs', () => {
  test('the CLI is spawned, but its input stays shut and it is not ready until the self-test passed', () => {
    const { m, fx } = startedPending();
    expect(of(fx, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 1 }]);
    expect(of(fx, 'open_cli_input')).toEqual([]);
    // A CLI that answered anyway (it cannot: the handshake is input) still does not count as ready.
    const early = m.handle({ type: 'cli_ready', gen: 1 });
    expect(of(early, 'open_cli_input')).toEqual([]);
    expect(m.handle({ type: 'linked' }).find((e) => e.type === 'status')).toMatchObject({
      status: { state: 'ready', cli: 'starting' },
    });
    const passed = m.handle({ type: 'guard', ok: true });
    expect(of(passed, 'open_cli_input')).toEqual([{ type: 'open_cli_input', gen: 1 }]);
    expect(of(passed, 'kill_cli')).toEqual([]);
    expect(lastStatus(m.handle({ type: 'cli_ready', gen: 1 }))).toEqual({
      type: 'status',
      state: 'ready',
      cli: 'running',
    });
  });

  test('a failed self-test kills the CLI already started, reports nothing for it, and opens no input', () => {
    const { m } = startedPending();
    const failed = m.handle({ type: 'guard', ok: false });
    expect(of(failed, 'kill_cli')).toEqual([{ type: 'kill_cli', gen: 1 }]);
    expect(of(failed, 'open_cli_input')).toEqual([]);
    expect(of(failed, 'emit')).toEqual([]);
    expect(lastStatus(failed)).toEqual({ type: 'status', state: 'starting', cli: 'stopped' });
    // Its exit and any late readiness belong to no one.
    expect(of(m.handle({ type: 'cli_ready', gen: 1 }), 'status')).toEqual([]);
    expect(m.handle({ type: 'cli_exit', gen: 1, exit: { code: null, signal: 'SIGKILL', stderrHead: '' } })).toEqual([]);
    // Then like every runner whose guard failed: the welcome's CLI never gets input (the sandbox
    // refuses its spawn too, and that refusal is what the session hears, as before).
    const linked = m.handle({ type: 'linked' });
    expect(of(linked, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 2 }]);
    expect(of(linked, 'open_cli_input')).toEqual([]);
  });

  test('with the self-test already passed, every spawn opens its input at once', () => {
    const m = new TurnMachine(T, 'passed');
    m.handle({ type: 'start' });
    const fx = m.handle({ type: 'prewarm' });
    expect(of(fx, 'open_cli_input')).toEqual([{ type: 'open_cli_input', gen: 1 }]);
    expect(of(m.handle({ type: 'guard', ok: false }), 'kill_cli')).toEqual([]);
  });
});
