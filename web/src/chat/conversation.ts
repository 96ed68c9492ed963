// The conversation as the page shows it, folded from the session's event stream. Pure: events
// in, a new immutable view out (unchanged turns keep their identity, so only what changed
// re-renders). Replayed and live events go through the same fold, so a reload shows exactly
// what a watcher saw live.
import type { ErrorInfo, EventOf, SessionState, StopReason, Usage } from '@switchyard/protocol';
import type { StreamEvent } from '../stream/session-stream.ts';

export type Block =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string }
  | {
      kind: 'tool';
      toolId: string;
      name: string;
      /** Partial JSON as it streams; `input` once complete. */
      inputText: string;
      input?: Record<string, unknown>;
      result?: { isError: boolean; output: string };
    }
  | { kind: 'error'; code: string; message: string }
  | ApprovalBlock;

/** A tool call waiting for (or decided by) a person; see approval-card.tsx. */
export interface ApprovalBlock {
  kind: 'approval';
  request: Omit<EventOf<'approval.request'>, 'type'>;
  resolution?: Omit<EventOf<'approval.resolved'>, 'type' | 'approvalId'>;
}

export interface TurnView {
  /** The user message this turn answers; null for events outside any turn. */
  messageId: string | null;
  user?: { text: string };
  blocks: Block[];
  retry?: { attempt: number; maxAttempts?: number; reason: string };
  done?: { stopReason: StopReason; usage?: Usage; costUsd?: number; durationMs?: number; error?: ErrorInfo };
}

export interface Conversation {
  lastEventId: string | null;
  state: SessionState | null;
  stateReason: string | null;
  model: string | null;
  turns: TurnView[];
  /** Per turn: which block each content index of the current model call went to. */
  calls: Map<string | null, Map<number, number>>;
  /** The id of the latest `workspace.saved`: the files panel reloads when it changes. */
  workspaceSaved: string | null;
}

export function emptyConversation(): Conversation {
  return {
    lastEventId: null,
    state: null,
    stateReason: null,
    model: null,
    turns: [],
    calls: new Map(),
    workspaceSaved: null,
  };
}

/** Folds a batch of events (already in log order) into a new conversation. */
export function applyEvents(conv: Conversation, events: readonly StreamEvent[]): Conversation {
  let next: Conversation | null = null;
  for (const ev of events) {
    const cur: Conversation = next ?? conv;
    if (cur.lastEventId !== null && ev.id <= cur.lastEventId) continue;
    // Copy-on-write: the first event of a batch copies the top level, later ones mutate the copy.
    next ??= { ...conv, turns: conv.turns.slice(), calls: copyCalls(conv.calls) };
    next.lastEventId = ev.id;
    apply(next, ev);
  }
  return next ?? conv;
}

/** Only open turns have entries (turn.done drops them), so this copy stays small. */
function copyCalls(calls: Conversation['calls']): Conversation['calls'] {
  return new Map([...calls].map(([k, v]) => [k, new Map(v)]));
}

function turnIndex(conv: Conversation, messageId: string | null): number {
  for (let i = conv.turns.length - 1; i >= 0; i--) if (conv.turns[i]!.messageId === messageId) return i;
  conv.turns.push({ messageId, blocks: [] });
  return conv.turns.length - 1;
}

/** A turn copied for editing (its blocks array too); stored back in place. */
function editTurn(conv: Conversation, messageId: string | null): TurnView {
  const i = turnIndex(conv, messageId);
  const t = conv.turns[i]!;
  const copy: TurnView = { ...t, blocks: t.blocks.slice() };
  conv.turns[i] = copy;
  return copy;
}

function callMap(conv: Conversation, messageId: string | null): Map<number, number> {
  let m = conv.calls.get(messageId);
  if (m === undefined) {
    m = new Map();
    conv.calls.set(messageId, m);
  }
  return m;
}

function appendDelta(
  conv: Conversation,
  messageId: string | null,
  index: number,
  kind: 'text' | 'thinking',
  text: string,
): void {
  const t = editTurn(conv, messageId);
  const calls = callMap(conv, messageId);
  const at = calls.get(index);
  const b = at === undefined ? undefined : t.blocks[at];
  if (b !== undefined && b.kind === kind) {
    t.blocks[at!] = { ...b, text: b.text + text };
  } else {
    calls.set(index, t.blocks.length);
    t.blocks.push({ kind, text });
  }
  delete t.retry;
}

function findTool(t: TurnView, toolId: string): number {
  for (let i = t.blocks.length - 1; i >= 0; i--) {
    const b = t.blocks[i]!;
    if (b.kind === 'tool' && b.toolId === toolId) return i;
  }
  return -1;
}

function apply(conv: Conversation, ev: StreamEvent): void {
  const mid = ev.messageId ?? null;
  switch (ev.type) {
    case 'session.status':
      conv.state = ev.state;
      conv.stateReason = ev.reason ?? null;
      return;
    case 'session.init':
      conv.model = ev.model ?? conv.model;
      return;
    case 'workspace.saved':
      conv.workspaceSaved = ev.id;
      return;
    case 'message.user': {
      const t = editTurn(conv, ev.messageId);
      t.user = { text: ev.text };
      return;
    }
    case 'text.delta':
    case 'thinking.delta':
      appendDelta(conv, mid, ev.index, ev.type === 'text.delta' ? 'text' : 'thinking', ev.text);
      return;
    case 'tool.start': {
      const t = editTurn(conv, mid);
      callMap(conv, mid).set(ev.index, t.blocks.length);
      t.blocks.push({ kind: 'tool', toolId: ev.toolId, name: ev.name, inputText: '' });
      return;
    }
    case 'tool.input': {
      const t = editTurn(conv, mid);
      const i = findTool(t, ev.toolId);
      const b = t.blocks[i];
      if (b?.kind === 'tool') t.blocks[i] = { ...b, inputText: b.inputText + ev.delta };
      return;
    }
    case 'tool.end': {
      const t = editTurn(conv, mid);
      const i = findTool(t, ev.toolId);
      const b = t.blocks[i];
      if (b?.kind === 'tool') t.blocks[i] = { ...b, name: ev.name, input: ev.input };
      else t.blocks.push({ kind: 'tool', toolId: ev.toolId, name: ev.name, inputText: '', input: ev.input });
      return;
    }
    case 'tool.result': {
      const t = editTurn(conv, mid);
      const i = findTool(t, ev.toolId);
      const b = t.blocks[i];
      const result = { isError: ev.isError, output: ev.output };
      if (b?.kind === 'tool') t.blocks[i] = { ...b, result };
      else t.blocks.push({ kind: 'tool', toolId: ev.toolId, name: 'tool', inputText: '', result });
      return;
    }
    case 'message.assistant': {
      // One model call is complete. Its blocks already streamed as deltas; a call that did
      // not stream (nothing recorded for it) is shown from the final content instead.
      const calls = callMap(conv, mid);
      if (calls.size === 0) {
        const t = editTurn(conv, mid);
        for (const c of ev.content) {
          if (c.type === 'tool_use')
            t.blocks.push({ kind: 'tool', toolId: c.id, name: c.name, inputText: '', input: c.input });
          else t.blocks.push({ kind: c.type, text: c.text });
        }
      }
      calls.clear();
      return;
    }
    case 'turn.retry': {
      const t = editTurn(conv, mid);
      t.retry = {
        attempt: ev.attempt,
        reason: ev.reason,
        ...(ev.maxAttempts !== undefined && { maxAttempts: ev.maxAttempts }),
      };
      return;
    }
    case 'turn.done': {
      const t = editTurn(conv, mid);
      delete t.retry;
      t.done = {
        stopReason: ev.stopReason,
        ...(ev.usage !== undefined && { usage: ev.usage }),
        ...(ev.costUsd !== undefined && { costUsd: ev.costUsd }),
        ...(ev.durationMs !== undefined && { durationMs: ev.durationMs }),
        ...(ev.error !== undefined && { error: ev.error }),
      };
      conv.calls.delete(mid);
      return;
    }
    case 'approval.request': {
      const { type: _type, messageId: _mid, id: _id, ...request } = ev;
      editTurn(conv, mid).blocks.push({ kind: 'approval', request });
      return;
    }
    case 'approval.resolved': {
      const t = editTurn(conv, mid);
      const i = t.blocks.findIndex((b) => b.kind === 'approval' && b.request.approvalId === ev.approvalId);
      const b = t.blocks[i];
      const { type: _type, messageId: _mid, id: _id, approvalId: _approval, ...resolution } = ev;
      if (b?.kind === 'approval') t.blocks[i] = { ...b, resolution };
      return;
    }
    case 'error': {
      const t = editTurn(conv, mid ?? conv.turns.at(-1)?.messageId ?? null);
      t.blocks.push({ kind: 'error', code: ev.code, message: ev.message });
      return;
    }
  }
}

/** Whether a turn is running: a user message whose turn.done has not arrived. */
export function runningTurn(conv: Conversation): TurnView | undefined {
  const last = conv.turns.at(-1);
  return last !== undefined && last.user !== undefined && last.done === undefined ? last : undefined;
}

/**
 * What a person reads at the end of a turn, if anything. An ending error the turn already shows
 * as an error block is not repeated: a start the server refuses (a failed clone) logs the error,
 * then ends the turn with the same one.
 */
export function turnEndText(turn: TurnView): string | null {
  const done = turn.done;
  if (done === undefined) return null;
  const error = done.error;
  if (
    done.stopReason === 'error' &&
    error !== undefined &&
    turn.blocks.some((b) => b.kind === 'error' && b.code === error.code && b.message === error.message)
  )
    return null;
  return stopReasonText(done);
}

/** What a person reads for a turn that did not end normally. */
export function stopReasonText(done: NonNullable<TurnView['done']>): string | null {
  switch (done.stopReason) {
    case 'end_turn':
      return null;
    case 'interrupted':
      return 'Interrupted';
    case 'max_tokens':
      return 'Stopped: the answer reached the maximum length (max_tokens)';
    case 'refusal':
      return 'The model refused to answer';
    case 'error':
      return `Error${done.error ? ` (${done.error.code}): ${done.error.message}` : ''}`;
    default:
      return `Ended: ${done.stopReason}`;
  }
}
