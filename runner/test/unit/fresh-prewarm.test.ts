import { launchEnvironment } from '@switchyard/protocol';
import { describe, expect, test } from 'vitest';
import { loadServeConfig } from '../../src/config.ts';
import { TurnMachine } from '../../src/serve/turn-machine.ts';
import { TIMINGS as T, effectsOf as of } from './turn-machine-fixtures.ts';

// A runner launched for a fresh session starts its CLI before the welcome (turn machine input
// `prewarm`, docs/DESIGN.md "Runner behaviour (serve)"); the welcome still decides: one that brings
// something to restore reloads that CLI onto it (pi) or replaces it with one started after it.

function prewarmed(ready: boolean): TurnMachine {
  const m = new TurnMachine(T);
  m.handle({ type: 'start' });
  expect(of(m.handle({ type: 'prewarm' }), 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 1 }]);
  if (ready) m.handle({ type: 'cli_ready', gen: 1 });
  return m;
}

describe('turn machine: the CLI as a hello reports it', () => {
  test('starting before the welcome whether or not it was spawned yet, running once ready, stopped after it died between turns', () => {
    const cold = new TurnMachine(T);
    cold.handle({ type: 'start' });
    // Not spawned yet: the welcome spawns it, so a message would wait for its start.
    expect(cold.cliAtHello).toBe('starting');
    const m = prewarmed(false);
    expect(m.cliAtHello).toBe('starting');
    m.handle({ type: 'cli_ready', gen: 1 });
    expect(m.cliAtHello).toBe('running');
    m.handle({ type: 'linked' });
    m.handle({ type: 'cli_exit', gen: 1, exit: { code: 1, signal: null, stderrHead: '' } });
    // Died between turns: the next message starts it again (the hub shows the session ready or idle).
    expect(m.cliAtHello).toBe('stopped');
  });
});

describe('turn machine: a fresh session CLI started before the welcome', () => {
  test('a welcome with nothing to restore keeps it: no second spawn, no kill, the first message goes to it', () => {
    for (const ready of [true, false]) {
      const m = prewarmed(ready);
      const linked = m.handle({ type: 'linked' });
      expect(of(linked, 'spawn_cli')).toEqual([]);
      expect(of(linked, 'kill_cli')).toEqual([]);
      const fx = m.handle({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
      expect(of(fx, 'write_message')).toEqual([{ type: 'write_message', gen: 1, message: { text: 'hi' } }]);
    }
  });

  test('a welcome that brings something to restore replaces it (ready or still starting), and the message goes to the new one', () => {
    for (const ready of [true, false]) {
      const m = prewarmed(ready);
      const linked = m.handle({ type: 'linked', restore: 'replace' });
      expect(of(linked, 'kill_cli')).toEqual([{ type: 'kill_cli', gen: 1, discard: true }]);
      expect(of(linked, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 2 }]);
      // Killed before the spawn, so the old group is gone before the new CLI reads the restored files.
      expect(linked.findIndex((e) => e.type === 'kill_cli')).toBeLessThan(
        linked.findIndex((e) => e.type === 'spawn_cli'),
      );
      expect(linked.filter((e) => e.type === 'status').at(-1)).toEqual({
        type: 'status',
        status: { type: 'status', state: 'ready', cli: 'starting' },
      });
      // The replaced CLI's late readiness, output and exit belong to no one.
      expect(of(m.handle({ type: 'cli_ready', gen: 1 }), 'status')).toEqual([]);
      expect(m.handle({ type: 'cli_exit', gen: 1, exit: { code: null, signal: 'SIGKILL', stderrHead: '' } })).toEqual(
        [],
      );
      const fx = m.handle({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
      expect(of(fx, 'spawn_cli')).toEqual([]);
      expect(of(fx, 'write_message')).toEqual([{ type: 'write_message', gen: 2, message: { text: 'hi' } }]);
      expect(of(m.handle({ type: 'cli_ready', gen: 2 }), 'set_timer').map((t) => t.name)).toContain('stall');
    }
  });

  test('a welcome to reload onto holds it (ready or still starting): no kill, no spawn, ready again when the reload is', () => {
    for (const ready of [true, false]) {
      const m = prewarmed(ready);
      const linked = m.handle({ type: 'linked', restore: 'reload' });
      expect(of(linked, 'reload_cli')).toEqual([{ type: 'reload_cli', gen: 1 }]);
      expect(of(linked, 'kill_cli')).toEqual([]);
      expect(of(linked, 'spawn_cli')).toEqual([]);
      // A reload that never ends is a start that never ends.
      expect(of(linked, 'set_timer').map((t) => t.name)).toContain('cli_start');
      expect(linked.filter((e) => e.type === 'status').at(-1)).toEqual({
        type: 'status',
        status: { type: 'status', state: 'ready', cli: 'starting' },
      });
      // A message meanwhile goes to that CLI (its slot holds it until the reload is answered).
      const fx = m.handle({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
      expect(of(fx, 'spawn_cli')).toEqual([]);
      expect(of(fx, 'write_message')).toEqual([{ type: 'write_message', gen: 1, message: { text: 'hi' } }]);
      expect(of(m.handle({ type: 'cli_ready', gen: 1 }), 'set_timer').map((t) => t.name)).toContain('stall');
    }
  });

  test('a reload that cannot be done ends that CLI as a failed start; the next message starts a new one', () => {
    const m = prewarmed(true);
    m.handle({ type: 'linked', restore: 'reload' });
    m.handle({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    const error = { code: 'workspace_cli_config', message: 'the workspace holds .pi/x', retryable: false };
    const failed = m.handle({ type: 'cli_spawn_failed', gen: 1, error });
    expect(of(failed, 'emit').map((e) => e.event)).toContainEqual({
      type: 'turn.done',
      stopReason: 'error',
      error,
    });
    const next = m.handle({ type: 'user_message', messageId: 'm2', message: { text: 'again' } });
    expect(of(next, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 2 }]);
  });

  test('its session.init waits for the welcome: emitted when the CLI is kept, dropped when it is reloaded, replaced or died', () => {
    const early = { type: 'session.init' as const, backend: 'pi' as const, cliSessionId: 'warm-up' };
    const later = { type: 'session.init' as const, backend: 'pi' as const, cliSessionId: 'the session' };
    const inits = (fx: ReturnType<TurnMachine['handle']>) =>
      of(fx, 'emit').flatMap((e) => (e.event.type === 'session.init' ? [e.event.cliSessionId] : []));
    for (const restore of [undefined, 'reload', 'replace'] as const) {
      const m = prewarmed(true);
      expect(inits(m.handle({ type: 'cli_event', gen: 1, event: early }))).toEqual([]);
      const linked = m.handle({ type: 'linked', ...(restore !== undefined && { restore }) });
      expect(inits(linked)).toEqual(restore === undefined ? ['warm-up'] : []);
      // The reloaded CLI's get_state, or the new CLI's handshake, names the session's conversation.
      const gen = restore === 'replace' ? 2 : 1;
      expect(inits(m.handle({ type: 'cli_event', gen, event: later }))).toEqual(['the session']);
    }
    const died = prewarmed(true);
    died.handle({ type: 'cli_event', gen: 1, event: early });
    died.handle({ type: 'cli_exit', gen: 1, exit: { code: 1, signal: null, stderrHead: '' } });
    expect(inits(died.handle({ type: 'linked' }))).toEqual([]);
  });

  test('without a prewarm a welcome with something to restore spawns once and kills nothing', () => {
    for (const restore of ['replace', 'reload'] as const) {
      const m = new TurnMachine(T);
      m.handle({ type: 'start' });
      const linked = m.handle({ type: 'linked', restore });
      expect(of(linked, 'kill_cli')).toEqual([]);
      expect(of(linked, 'reload_cli')).toEqual([]);
      expect(of(linked, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 1 }]);
    }
  });

  test('a prewarmed CLI that died before the welcome is started again by it', () => {
    const m = prewarmed(false);
    m.handle({ type: 'cli_exit', gen: 1, exit: { code: 1, signal: null, stderrHead: 'boom' } });
    const linked = m.handle({ type: 'linked' });
    expect(of(linked, 'kill_cli')).toEqual([]);
    expect(of(linked, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 2 }]);
  });
});

describe('SWITCHYARD_FRESH_SESSION', () => {
  const input = {
    hubUrl: 'ws://127.0.0.1:8787/internal/runner/connect',
    sessionId: 'S1',
    backend: 'claude' as const,
    runnerId: 'R1',
    idleMs: 900_000,
    maxLifetimeMs: 3_600_000,
    runnerToken: 'syr1.t',
    model: null,
  };

  test('only a launch the edge marks fresh carries it, and serve reads it', () => {
    const fresh = launchEnvironment({ ...input, fresh: true });
    expect(fresh.SWITCHYARD_FRESH_SESSION).toBe('1');
    const plain = launchEnvironment(input);
    expect('SWITCHYARD_FRESH_SESSION' in plain).toBe(false);
    const read = (env: Record<string, string | undefined>) => {
      const c = loadServeConfig(env, '/tmp');
      if (!c.ok) throw new Error(c.error.message);
      return c.value.freshSession;
    };
    expect(read(fresh)).toBe(true);
    expect(read(plain)).toBe(false);
    expect(loadServeConfig({ ...plain, SWITCHYARD_FRESH_SESSION: 'yes' }, '/tmp').ok).toBe(false);
  });

  test('SWITCHYARD_WARM_UP: only beside SWITCHYARD_FRESH_SESSION, in the launch and in what serve reads', () => {
    const warm = launchEnvironment({ ...input, fresh: true, warmUp: true });
    expect(warm.SWITCHYARD_WARM_UP).toBe('1');
    // A warm-up asked for a session that is not fresh is dropped: its CLI starts after the welcome.
    expect('SWITCHYARD_WARM_UP' in launchEnvironment({ ...input, warmUp: true })).toBe(false);
    expect('SWITCHYARD_WARM_UP' in launchEnvironment({ ...input, fresh: true })).toBe(false);
    const read = (env: Record<string, string | undefined>) => {
      const c = loadServeConfig(env, '/tmp');
      if (!c.ok) throw new Error(c.error.message);
      return c.value.warmUp;
    };
    expect(read(warm)).toBe(true);
    const { SWITCHYARD_FRESH_SESSION: _, ...notFresh } = warm;
    expect(read(notFresh)).toBe(false);
    expect(loadServeConfig({ ...warm, SWITCHYARD_WARM_UP: 'yes' }, '/tmp').ok).toBe(false);
  });
});
