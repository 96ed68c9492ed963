// Encodes a decided reply the way the Anthropic Messages API sends it. Pure.
import type { ErrorReply, MessageReply, ReplyStep } from './script.ts';

/** One piece of a streamed reply: bytes to write after a pause, or the point where the connection dies. */
export type StreamChunk = { kind: 'write'; delayMs: number; data: string } | { kind: 'cut' };

export function sseEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** Splits into `n` near-equal pieces by code point, so no surrogate pair is torn. */
export function splitChunks(s: string, n: number): string[] {
  const cps = Array.from(s);
  const count = Math.max(1, Math.min(n, cps.length));
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    out.push(cps.slice(Math.floor((i * cps.length) / count), Math.floor(((i + 1) * cps.length) / count)).join(''));
  }
  return out;
}

type ContentBlockOut =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function contentOf(steps: ReplyStep[]): ContentBlockOut[] {
  return steps.filter((s): s is ContentBlockOut => s.type !== 'cut');
}

function startMessage(reply: MessageReply): Record<string, unknown> {
  return {
    id: reply.id,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: {
      input_tokens: reply.usage.input_tokens,
      output_tokens: 1,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/**
 * The SSE stream for a reply. Deltas are paced: every delta after the first
 * waits `delayMs`, so a client can interrupt mid-stream. A `cut` step ends
 * the list without closing the open block or the message.
 */
export function encodeStream(reply: MessageReply): StreamChunk[] {
  const out: StreamChunk[] = [];
  let firstDelta = true;
  const write = (data: string, paced = false): void => {
    out.push({ kind: 'write', delayMs: paced && !firstDelta ? reply.delayMs : 0, data });
    if (paced) firstDelta = false;
  };
  write(sseEvent('message_start', { message: startMessage(reply) }));
  write(sseEvent('ping', {}));
  for (let i = 0; i < reply.steps.length; i++) {
    const step = reply.steps[i];
    if (step === undefined || step.type === 'cut') {
      out.push({ kind: 'cut' });
      return out;
    }
    const delta = (d: Record<string, unknown>): void =>
      write(sseEvent('content_block_delta', { index: i, delta: d }), true);
    if (step.type === 'thinking') {
      write(
        sseEvent('content_block_start', { index: i, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      );
      for (const piece of splitChunks(step.thinking, reply.chunks)) delta({ type: 'thinking_delta', thinking: piece });
      delta({ type: 'signature_delta', signature: step.signature });
    } else if (step.type === 'text') {
      write(sseEvent('content_block_start', { index: i, content_block: { type: 'text', text: '' } }));
      for (const piece of splitChunks(step.text, reply.chunks)) delta({ type: 'text_delta', text: piece });
    } else {
      write(
        sseEvent('content_block_start', {
          index: i,
          content_block: { type: 'tool_use', id: step.id, name: step.name, input: {} },
        }),
      );
      // The real API opens tool input with an empty fragment; clients must cope, so we do the same.
      delta({ type: 'input_json_delta', partial_json: '' });
      for (const piece of splitChunks(JSON.stringify(step.input), reply.chunks))
        delta({ type: 'input_json_delta', partial_json: piece });
    }
    // A cut right after a block means "mid-block": leave it open.
    if (reply.steps[i + 1]?.type === 'cut') {
      out.push({ kind: 'cut' });
      return out;
    }
    write(sseEvent('content_block_stop', { index: i }));
  }
  write(
    sseEvent('message_delta', {
      delta: { stop_reason: reply.stopReason, stop_sequence: null },
      usage: { output_tokens: reply.usage.output_tokens },
    }),
  );
  write(sseEvent('message_stop', {}));
  return out;
}

/** The non-streaming JSON body for a reply (a cut is the server's business). */
export function encodeMessage(reply: MessageReply): Record<string, unknown> {
  return {
    id: reply.id,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: contentOf(reply.steps),
    stop_reason: reply.stopReason,
    stop_sequence: null,
    usage: {
      input_tokens: reply.usage.input_tokens,
      output_tokens: reply.usage.output_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/** Total pause a non-streaming reply should take, to match its streamed pacing. */
export function totalDelayMs(reply: MessageReply): number {
  return encodeStream(reply).reduce((n, c) => n + (c.kind === 'write' ? c.delayMs : 0), 0);
}

export type HttpError = { status: number; headers: Record<string, string>; body: Record<string, unknown> };

/**
 * Anthropic's error shape. No request_id in the body: pi decides whether to
 * retry by regex over the error text, and a number like 429 or 500 inside an
 * id would make a 401 look retryable.
 */
export function encodeError(reply: Pick<ErrorReply, 'status' | 'errorType' | 'message' | 'retryAfter'>): HttpError {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
  return {
    status: reply.status,
    headers,
    body: { type: 'error', error: { type: reply.errorType, message: reply.message } },
  };
}
