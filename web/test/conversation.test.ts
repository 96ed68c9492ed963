import type { AgentEvent } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, runningTurn, stopReasonText, turnEndText } from '../src/chat/conversation.ts';
import type { StreamEvent } from '../src/stream/session-stream.ts';

let n = 0;
/** Increasing ids, as the hub's ULIDs are. */
const id = () => `01J${String(++n).padStart(23, '0')}`;
const ev = (e: AgentEvent, messageId?: string): StreamEvent => ({
  ...e,
  id: id(),
  ...(messageId !== undefined && { messageId }),
});

/** One turn with thinking, text, a tool call and its result across two model calls. */
function toolTurn(m: string): StreamEvent[] {
  return [
    ev({ type: 'message.user', messageId: m, text: 'list files' }),
    ev({ type: 'session.status', state: 'busy' }),
    ev({ type: 'thinking.delta', index: 0, text: 'hmm' }, m),
    ev({ type: 'text.delta', index: 1, text: 'Let me ' }, m),
    ev({ type: 'text.delta', index: 1, text: 'look.' }, m),
    ev({ type: 'tool.start', index: 2, toolId: 't1', name: 'Bash' }, m),
    ev({ type: 'tool.input', index: 2, toolId: 't1', delta: '{"command":' }, m),
    ev({ type: 'tool.input', index: 2, toolId: 't1', delta: '"ls"}' }, m),
    ev({ type: 'tool.end', index: 2, toolId: 't1', name: 'Bash', input: { command: 'ls' } }, m),
    ev({ type: 'message.assistant', content: [] }, m),
    ev({ type: 'tool.result', toolId: 't1', isError: false, output: 'a.txt' }, m),
    // The second model call restarts indexes at 0: a new block, not an append to "hmm".
    ev({ type: 'text.delta', index: 0, text: 'Found a.txt' }, m),
    ev({ type: 'message.assistant', content: [{ type: 'text', text: 'Found a.txt' }] }, m),
    ev({ type: 'turn.done', stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 5 }, costUsd: 0.01 }, m),
    ev({ type: 'session.status', state: 'idle' }),
  ];
}

describe('the conversation fold', () => {
  it('builds blocks in order: thinking, text, a tool card with input and result, text of the next call', () => {
    const c = applyEvents(emptyConversation(), toolTurn('m1'));
    expect(c.state).toBe('idle');
    expect(c.turns).toHaveLength(1);
    const t = c.turns[0]!;
    expect(t.user).toEqual({ text: 'list files' });
    expect(t.blocks).toEqual([
      { kind: 'thinking', text: 'hmm' },
      { kind: 'text', text: 'Let me look.' },
      {
        kind: 'tool',
        toolId: 't1',
        name: 'Bash',
        inputText: '{"command":"ls"}',
        input: { command: 'ls' },
        result: { isError: false, output: 'a.txt' },
      },
      { kind: 'text', text: 'Found a.txt' },
    ]);
    expect(t.done).toEqual({ stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 5 }, costUsd: 0.01 });
    expect(runningTurn(c)).toBeUndefined();
  });

  it('folds the same whether events come one by one (live) or all at once (replay)', () => {
    const events = [...toolTurn('m1'), ...toolTurn('m2')];
    const live = events.reduce((c, e) => applyEvents(c, [e]), emptyConversation());
    const replay = applyEvents(emptyConversation(), events);
    expect(live.turns).toEqual(replay.turns);
    expect(live.lastEventId).toBe(events.at(-1)!.id);
  });

  it('drops events at or below the last id it has (a replay overlapping what is shown adds nothing)', () => {
    const events = toolTurn('m1');
    const once = applyEvents(emptyConversation(), events);
    const again = applyEvents(once, events.slice(3));
    expect(again).toBe(once);
    expect(again.turns[0]!.blocks[1]).toEqual({ kind: 'text', text: 'Let me look.' });
  });

  it('never mutates what it was given, and keeps unchanged turns identical', () => {
    const first = applyEvents(emptyConversation(), toolTurn('m1'));
    const snapshot = structuredClone(first.turns);
    const second = applyEvents(first, [
      ev({ type: 'message.user', messageId: 'm2', text: 'next' }),
      ev({ type: 'text.delta', index: 0, text: 'x' }, 'm2'),
    ]);
    expect(first.turns).toEqual(snapshot);
    expect(second.turns[0]).toBe(first.turns[0]);
    expect(runningTurn(second)?.messageId).toBe('m2');
  });

  it('shows a retry while it waits, and clears it when output resumes', () => {
    const m = 'm1';
    const c = applyEvents(emptyConversation(), [
      ev({ type: 'message.user', messageId: m, text: 'hi' }),
      ev({ type: 'turn.retry', attempt: 2, maxAttempts: 5, reason: 'overloaded' }, m),
    ]);
    expect(c.turns[0]!.retry).toEqual({ attempt: 2, maxAttempts: 5, reason: 'overloaded' });
    const resumed = applyEvents(c, [ev({ type: 'text.delta', index: 0, text: 'ok' }, m)]);
    expect(resumed.turns[0]!.retry).toBeUndefined();
  });

  it('shows a model call that did not stream from its final content', () => {
    const m = 'm1';
    const c = applyEvents(emptyConversation(), [
      ev({ type: 'message.user', messageId: m, text: 'hi' }),
      ev(
        {
          type: 'message.assistant',
          content: [
            { type: 'text', text: 'whole' },
            { type: 'tool_use', id: 't', name: 'Read', input: { path: 'a' } },
          ],
        },
        m,
      ),
    ]);
    expect(c.turns[0]!.blocks).toEqual([
      { kind: 'text', text: 'whole' },
      { kind: 'tool', toolId: 't', name: 'Read', inputText: '', input: { path: 'a' } },
    ]);
  });

  it('puts an error outside a turn on the latest turn', () => {
    const c = applyEvents(applyEvents(emptyConversation(), toolTurn('m1')), [
      ev({ type: 'error', code: 'cli_bad_line', message: 'bad', retryable: false }),
    ]);
    expect(c.turns[0]!.blocks.at(-1)).toEqual({ kind: 'error', code: 'cli_bad_line', message: 'bad' });
  });

  it('says why a turn ended when it did not end normally', () => {
    expect(stopReasonText({ stopReason: 'end_turn' })).toBeNull();
    expect(stopReasonText({ stopReason: 'interrupted' })).toBe('Interrupted');
    expect(stopReasonText({ stopReason: 'max_tokens' })).toMatch(/max_tokens/);
    expect(stopReasonText({ stopReason: 'refusal' })).toMatch(/refused/);
    expect(
      stopReasonText({ stopReason: 'error', error: { code: 'provider_auth', message: 'bad key', retryable: false } }),
    ).toBe('Error (provider_auth): bad key');
  });

  it('does not repeat an ending error the turn already shows; another ending error is said', () => {
    const failed = { code: 'repository_clone_failed', message: 'could not clone', retryable: false };
    const turn = (error: typeof failed, ending: typeof failed) =>
      applyEvents(emptyConversation(), [
        ev({ type: 'message.user', messageId: 'm1', text: 'go' }),
        ev({ type: 'error', ...error }, 'm1'),
        ev({ type: 'turn.done', stopReason: 'error', error: ending }, 'm1'),
      ]).turns[0]!;
    expect(turnEndText(turn(failed, failed))).toBeNull();
    expect(turnEndText(turn(failed, { ...failed, message: 'the runner stopped' }))).toBe(
      'Error (repository_clone_failed): the runner stopped',
    );
    expect(turnEndText(applyEvents(emptyConversation(), toolTurn('m2')).turns[0]!)).toBeNull();
  });
});
