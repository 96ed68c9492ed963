import { describe, expect, it } from 'vitest';
import type { MessageReply, ReplyStep } from '../src/script.ts';
import { encodeError, encodeMessage, encodeStream, splitChunks, sseEvent, totalDelayMs } from '../src/sse.ts';
import type { StreamChunk } from '../src/sse.ts';

function reply(steps: ReplyStep[], extra: Partial<MessageReply> = {}): MessageReply {
  return {
    kind: 'message',
    id: 'msg_1',
    model: 'offline-1',
    steps,
    stopReason: steps.some((s) => s.type === 'tool_use') ? 'tool_use' : 'end_turn',
    usage: { input_tokens: 10, output_tokens: 3 },
    chunks: 1,
    delayMs: 0,
    source: 'default',
    ...extra,
  };
}

type Event = { type: string; [k: string]: unknown };

/** Parses the SSE text back, checking each frame's `event:` matches its data's type. */
function events(chunks: StreamChunk[]): Event[] {
  const text = chunks.map((c) => (c.kind === 'write' ? c.data : '')).join('');
  return text
    .split('\n\n')
    .filter((f) => f !== '')
    .map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split('\n');
      expect(rest).toEqual([]);
      const data = JSON.parse(dataLine?.replace(/^data: /, '') ?? '') as Event;
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
}

describe('sseEvent', () => {
  it('frames one event', () => {
    expect(sseEvent('ping', {})).toBe('event: ping\ndata: {"type":"ping"}\n\n');
  });
});

describe('splitChunks', () => {
  it('splits into n pieces that join back, never tearing a surrogate pair', () => {
    expect(splitChunks('abcdef', 3)).toEqual(['ab', 'cd', 'ef']);
    expect(splitChunks('ab', 5)).toEqual(['a', 'b']);
    expect(splitChunks('', 3)).toEqual(['']);
    const emoji = '😀😀😀';
    expect(splitChunks(emoji, 3)).toEqual(['😀', '😀', '😀']);
  });
});

describe('encodeStream', () => {
  it('text: the full Anthropic event sequence', () => {
    const ev = events(encodeStream(reply([{ type: 'text', text: 'hello' }])));
    expect(ev.map((e) => e.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(ev[0]).toMatchObject({
      message: { id: 'msg_1', role: 'assistant', model: 'offline-1', content: [], usage: { input_tokens: 10 } },
    });
    expect(ev[2]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(ev[3]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } });
    expect(ev[5]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 3 },
    });
  });

  it('thinking (with signature_delta) then text, indexed in order', () => {
    const ev = events(
      encodeStream(
        reply([
          { type: 'thinking', thinking: 'hmm', signature: 'sig' },
          { type: 'text', text: 'ok' },
        ]),
      ),
    );
    const deltas = ev.filter((e) => e.type === 'content_block_delta');
    expect(deltas).toEqual([
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'ok' } },
    ]);
    expect(ev.find((e) => e.type === 'content_block_start')).toMatchObject({ content_block: { type: 'thinking' } });
  });

  it('tool_use: input arrives as input_json_delta fragments, stop_reason tool_use', () => {
    const input = { file_path: '/x', content: 'hi there' };
    const ev = events(encodeStream(reply([{ type: 'tool_use', id: 'toolu_1', name: 'Write', input }], { chunks: 3 })));
    expect(ev.find((e) => e.type === 'content_block_start')).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'Write', input: {} },
    });
    const fragments = ev.flatMap((e) =>
      e.type === 'content_block_delta' ? [(e.delta as { partial_json: string }).partial_json] : [],
    );
    expect(fragments[0]).toBe('');
    expect(fragments).toHaveLength(4);
    expect(JSON.parse(fragments.join(''))).toEqual(input);
    expect(ev.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' } });
  });

  it('chunks and delayMs pace every delta after the first', () => {
    const chunks = encodeStream(reply([{ type: 'text', text: 'abcd' }], { chunks: 4, delayMs: 25 }));
    const writes = chunks.filter((c): c is Extract<StreamChunk, { kind: 'write' }> => c.kind === 'write');
    const deltas = writes.filter((c) => c.data.startsWith('event: content_block_delta'));
    expect(deltas.map((d) => d.delayMs)).toEqual([0, 25, 25, 25]);
    expect(writes.filter((c) => !c.data.startsWith('event: content_block_delta')).every((c) => c.delayMs === 0)).toBe(
      true,
    );
    expect(totalDelayMs(reply([{ type: 'text', text: 'abcd' }], { chunks: 4, delayMs: 25 }))).toBe(75);
  });

  it('cut: message_start and part of a text block, then the cut, with no stop events', () => {
    const chunks = encodeStream(reply([{ type: 'text', text: 'partial' }, { type: 'cut' }]));
    expect(chunks.at(-1)).toEqual({ kind: 'cut' });
    const types = events(chunks).map((e) => e.type);
    expect(types).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
  });
});

describe('encodeMessage', () => {
  it('a complete non-streaming message without the cut marker', () => {
    const m = encodeMessage(
      reply([
        { type: 'thinking', thinking: 't', signature: 's' },
        { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
      ]),
    );
    expect(m).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'offline-1',
      content: [
        { type: 'thinking', thinking: 't', signature: 's' },
        { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
    expect(encodeMessage(reply([{ type: 'text', text: 'x' }, { type: 'cut' }])).content).toEqual([
      { type: 'text', text: 'x' },
    ]);
  });
});

describe('encodeError', () => {
  it("Anthropic's error shape; retry-after only when asked", () => {
    expect(encodeError({ status: 429, errorType: 'rate_limit_error', message: 'slow down', retryAfter: 0 })).toEqual({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '0' },
      body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
    });
    expect(encodeError({ status: 529, errorType: 'overloaded_error', message: 'Overloaded' }).headers).toEqual({
      'content-type': 'application/json',
    });
  });
});
