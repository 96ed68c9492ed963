import { describe, expect, it } from 'vitest';
import { adapterFor, type AgentEvent, type Backend } from '../src/index.ts';

// The outcomes DESIGN.md defines for bad CLI output, on both codecs.
const backends: Backend[] = ['claude', 'pi'];

function types(events: AgentEvent[]): string[] {
  return events.map((e) => e.type);
}

describe.each(backends)('%s codec, bad input', (backend) => {
  it('a line that is not JSON is an error event with the line head, and the stream goes on', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    const events = codec.parse('Segmentation fault (core dumped) while printing a very long line');
    expect(events).toEqual([
      expect.objectContaining({
        type: 'error',
        code: 'cli_bad_line',
        retryable: false,
        message: expect.stringContaining('Segmentation fault'),
      }),
    ]);
    expect(codec.turnOpen).toBe(true);
    expect(codec.parse('[1,2]')).toEqual([expect.objectContaining({ type: 'error', code: 'cli_bad_line' })]);
  });

  it('unknown event types are skipped, never fatal', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    expect(codec.parse('{"type":"brand_new_event","payload":{"x":1}}')).toEqual([]);
    expect(codec.parse('{"no_type":true}')).toEqual([]);
    expect(codec.turnOpen).toBe(true);
  });

  it('a truncated last line at EOF is reported, and the open turn is closed by end()', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    expect(types(codec.parse('{"type":"stream_event","event":{"type":"content_bl'))).toEqual(['error']);
    const end = codec.end({ code: 0, signal: null, stderrHead: '' });
    expect(end).toEqual([expect.objectContaining({ type: 'turn.done', stopReason: 'error' })]);
    expect(codec.turnOpen).toBe(false);
  });

  it('exit 0 with no events but stderr is a failure carrying the first stderr line', () => {
    const codec = adapterFor(backend).createCodec();
    const events = codec.end({ code: 0, signal: null, stderrHead: 'No API key found for provider\nsecond line\n' });
    expect(events).toEqual([
      { type: 'error', code: 'cli_no_output', message: 'No API key found for provider', retryable: false },
    ]);
  });

  it('exit 0 with no events mid-turn closes the turn as an error with the stderr head', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    const events = codec.end({ code: 0, signal: null, stderrHead: 'Error: model not found\n  at foo' });
    expect(events).toEqual([
      expect.objectContaining({
        type: 'turn.done',
        stopReason: 'error',
        error: expect.objectContaining({ message: expect.stringContaining('Error: model not found') }),
      }),
    ]);
  });

  it('a CLI killed mid-turn ends the turn exactly once', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    const first = codec.end({ code: null, signal: 'SIGKILL', stderrHead: '' });
    expect(first).toEqual([
      expect.objectContaining({
        type: 'turn.done',
        stopReason: 'error',
        error: expect.objectContaining({ code: 'cli_exited' }),
      }),
    ]);
    expect(codec.end({ code: null, signal: 'SIGKILL', stderrHead: '' })).toEqual([
      expect.objectContaining({ type: 'error' }),
    ]);
  });

  it('a CLI killed after an interrupt ends the turn as interrupted', () => {
    const codec = adapterFor(backend).createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    codec.encodeInterrupt();
    expect(codec.end({ code: null, signal: 'SIGKILL', stderrHead: '' })).toEqual([
      { type: 'turn.done', stopReason: 'interrupted' },
    ]);
  });

  it('a clean exit with no turn open and no stderr says nothing', () => {
    const codec = adapterFor(backend).createCodec();
    expect(codec.end({ code: 0, signal: null, stderrHead: '' })).toEqual([]);
  });
});
