import type { AgentEvent } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation } from '../src/chat/conversation.ts';
import type { StreamEvent } from '../src/stream/session-stream.ts';

let n = 0;
const id = () => `01K${String(++n).padStart(23, '0')}`;
const ev = (e: AgentEvent, messageId?: string): StreamEvent => ({
  ...e,
  id: id(),
  ...(messageId !== undefined && { messageId }),
});

const request = (approvalId: string): AgentEvent => ({
  type: 'approval.request',
  approvalId,
  toolId: `t-${approvalId}`,
  name: 'Write',
  kind: 'write',
  input: { file_path: '/w/a.txt' },
  expiresAt: '2026-11-30T21:00:00.000Z',
});

describe('the conversation fold: approvals', () => {
  const events = [
    ev({ type: 'message.user', messageId: 'm1', text: 'write it' }),
    ev(request('a1'), 'm1'),
    ev(request('a2'), 'm1'),
    ev(
      { type: 'approval.resolved', approvalId: 'a2', decision: 'deny', reason: 'user', by: 'ann', message: 'no' },
      'm1',
    ),
    ev({ type: 'approval.resolved', approvalId: 'a1', decision: 'allow', reason: 'user', by: 'bob' }, 'm1'),
  ];

  it('a request is a card in its turn; each resolution lands on its own card', () => {
    const pending = applyEvents(emptyConversation(), events.slice(0, 3));
    const { type: _t, ...fields } = request('a1') as Extract<AgentEvent, { type: 'approval.request' }>;
    expect(pending.turns[0]?.blocks).toEqual([
      { kind: 'approval', request: fields },
      { kind: 'approval', request: { ...fields, approvalId: 'a2', toolId: 't-a2' } },
    ]);
    const all = applyEvents(emptyConversation(), events);
    expect(all.turns[0]?.blocks.map((b) => (b.kind === 'approval' ? b.resolution : null))).toEqual([
      { decision: 'allow', reason: 'user', by: 'bob' },
      { decision: 'deny', reason: 'user', by: 'ann', message: 'no' },
    ]);
  });

  it('replay equals live: one by one gives the same view as all at once', () => {
    let c = emptyConversation();
    for (const e of events) c = applyEvents(c, [e]);
    expect(c.turns).toEqual(applyEvents(emptyConversation(), events).turns);
  });
});
