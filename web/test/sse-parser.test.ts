import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/stream/sse-parser.ts';

describe('SseParser', () => {
  it('parses id, event and data; a blank line dispatches; comments are reported', () => {
    const p = new SseParser();
    expect(p.push(': connected\n\nid: 01A\nevent: text.delta\ndata: {"a":1}\n\n')).toEqual([
      { kind: 'comment', text: 'connected' },
      { kind: 'event', id: '01A', event: 'text.delta', data: '{"a":1}' },
    ]);
  });

  it('keeps a frame split anywhere across chunks, including between CR and LF', () => {
    const text = 'id: 1\r\nevent: x\r\ndata: hello\r\n\r\nid: 2\ndata: a\ndata: b\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const items = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      expect(items).toEqual([
        { kind: 'event', id: '1', event: 'x', data: 'hello' },
        { kind: 'event', id: '2', event: 'message', data: 'a\nb' },
      ]);
    }
  });

  it('handles bare CR line ends, a field without a colon, and ignores frames with no data', () => {
    const p = new SseParser();
    expect(p.push('id: 9\revent: e\r\rdata\r\r')).toEqual([{ kind: 'event', id: null, event: 'message', data: '' }]);
  });

  it('keeps a multi-byte character whole when the text arrives char by char', () => {
    const p = new SseParser();
    const out = [...'data: héllo ☃\n\n'].flatMap((ch) => p.push(ch));
    expect(out).toEqual([{ kind: 'event', id: null, event: 'message', data: 'héllo ☃' }]);
  });
});
