import { describe, expect, test } from 'vitest';
import type { AgentEvent } from '@switchyard/protocol';
import type { MachineEffect, MachineInput } from '../../src/serve/turn-machine.ts';
import { effectsOf, readyMachine } from './turn-machine-fixtures.ts';

// When the machine says the CLI's next model call is coming (`model_call_coming`), so the model
// proxy can open its upstream connection meanwhile (docs/DESIGN.md "Runner behaviour (serve)").

const event = (e: AgentEvent): MachineInput => ({ type: 'cli_event', gen: 1, event: e });
const toolEnd = (toolId: string) => event({ type: 'tool.end', index: 0, toolId, name: 'Bash', input: {} });
const toolResult = (toolId: string) => event({ type: 'tool.result', toolId, isError: false, output: '' });
const approvalRequest = (approvalId: string, toolId: string) =>
  event({
    type: 'approval.request',
    approvalId,
    toolId,
    name: 'Bash',
    kind: 'shell',
    input: {},
    expiresAt: '2026-11-30T20:00:00.000Z',
  });
const announced = (fx: MachineEffect[]) => effectsOf(fx, 'model_call_coming');

describe('TurnMachine: the model call coming', () => {
  test('follows the message written to the CLI, for the same CLI', () => {
    const run = readyMachine();
    const fx = run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    const kinds = fx.map((e) => e.type);
    expect(kinds.indexOf('model_call_coming')).toBeGreaterThan(kinds.indexOf('write_message'));
    expect(announced(fx)).toEqual([{ type: 'model_call_coming', gen: 1 }]);
  });

  test('comes with the last result of the tools that ran, not before', () => {
    const run = readyMachine();
    run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    run(toolEnd('a'));
    run(toolEnd('b'));
    expect(announced(run(toolResult('a')))).toEqual([]);
    expect(announced(run(toolResult('b')))).toEqual([{ type: 'model_call_coming', gen: 1 }]);
  });

  test('comes when the last approval waited on is answered, and again with its tool result', () => {
    const run = readyMachine();
    run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    run(toolEnd('t1'));
    run(approvalRequest('a1', 't1'));
    run(toolEnd('t2'));
    run(approvalRequest('a2', 't2'));
    expect(announced(run({ type: 'approval_answered', approvalId: 'a1' }))).toEqual([]);
    // A tool's result while another approval still waits: the call waits for that person too.
    expect(announced(run(toolResult('t1')))).toEqual([]);
    expect(announced(run({ type: 'approval_answered', approvalId: 'a2' }))).toEqual([
      { type: 'model_call_coming', gen: 1 },
    ]);
    expect(announced(run(toolResult('t2')))).toEqual([{ type: 'model_call_coming', gen: 1 }]);
  });

  test('not for a CLI the runner gave up on', () => {
    const run = readyMachine();
    run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    const fromAnEarlierCli = {
      type: 'cli_event',
      gen: 0,
      event: { type: 'tool.result', toolId: 'x', isError: false, output: '' },
    } as const;
    expect(announced(run(fromAnEarlierCli))).toEqual([]);
    expect(announced(run(toolResult('x')))).toEqual([{ type: 'model_call_coming', gen: 1 }]);
  });

  test('not in a turn being interrupted', () => {
    const run = readyMachine();
    run({ type: 'user_message', messageId: 'm1', message: { text: 'hi' } });
    run(toolEnd('t1'));
    run(approvalRequest('a1', 't1'));
    run({ type: 'interrupt', requestId: 'i1' });
    expect(announced(run({ type: 'approval_answered', approvalId: 'a1' }))).toEqual([]);
    expect(announced(run(toolResult('t1')))).toEqual([]);
  });
});
