import { describe, expect, test } from 'vitest';
import type { AgentEvent } from '@switchyard/protocol';
import type { MachineEffect } from '../../src/serve/turn-machine.ts';
import { readyMachine, TIMINGS as T } from './turn-machine-fixtures.ts';

// The stall watchdog while the CLI waits for a person (DESIGN "Tool approvals").

function busy() {
  const run = readyMachine();
  run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
  return run;
}

const request = (approvalId: string): AgentEvent => ({
  type: 'approval.request',
  approvalId,
  toolId: `t-${approvalId}`,
  name: 'Write',
  kind: 'write',
  input: {},
  expiresAt: '2026-11-30T20:00:00.000Z',
});
const stallSet = (fx: MachineEffect[]) =>
  fx.find((e): e is Extract<MachineEffect, { type: 'set_timer' }> => e.type === 'set_timer' && e.name === 'stall');
const stallCleared = (fx: MachineEffect[]) => fx.some((e) => e.type === 'clear_timer' && e.name === 'stall');

describe('TurnMachine: approvals', () => {
  test('the watchdog is off while any approval waits, and back on when the last is answered', () => {
    const run = busy();
    const asked = run({ type: 'cli_event', gen: 1, event: request('a1') });
    expect(stallCleared(asked)).toBe(true);
    // The request is emitted with its turn's id like any event.
    expect(asked.find((e) => e.type === 'emit')).toMatchObject({ messageId: 'm1' });
    run({ type: 'cli_event', gen: 1, event: request('a2') });
    // CLI output meanwhile (claude's keep-alives, a parallel tool) does not re-arm it.
    expect(stallSet(run({ type: 'cli_output', gen: 1 }))).toBeUndefined();
    expect(stallSet(run({ type: 'approval_answered', approvalId: 'a1' }))).toBeUndefined();
    // An answer for something not waiting changes nothing.
    expect(stallSet(run({ type: 'approval_answered', approvalId: 'nope' }))).toBeUndefined();
    expect(stallSet(run({ type: 'approval_answered', approvalId: 'a2' }))?.ms).toBe(T.stallMs);
    expect(stallSet(run({ type: 'cli_output', gen: 1 }))?.ms).toBe(T.stallMs);
  });

  test('an interrupt while waiting still escalates on its deadline', () => {
    const run = busy();
    run({ type: 'cli_event', gen: 1, event: request('a1') });
    const fx = run({ type: 'interrupt', requestId: 'i1' });
    expect(fx.some((e) => e.type === 'cli_interrupt')).toBe(true);
    expect(fx.find((e) => e.type === 'set_timer' && e.name === 'interrupt_deadline')).toBeDefined();
  });
});
