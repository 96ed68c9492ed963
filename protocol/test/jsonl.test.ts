import { describe, expect, it } from 'vitest';
import { JsonlSplitter } from '../src/jsonl.ts';

describe('JsonlSplitter', () => {
  it('splits on LF only and keeps U+2028/U+2029 inside records', () => {
    const s = new JsonlSplitter();
    const rec = JSON.stringify({ text: 'a\u2028b\u2029c' });
    // JSON.stringify leaves U+2028 raw; a readline-based splitter would break here.
    expect(rec).toContain('\u2028');
    expect(s.push(`${rec}\n${rec}`)).toEqual([rec]);
    expect(s.flush()).toEqual([rec]);
  });

  it('strips exactly one trailing CR and joins records split across chunks', () => {
    const s = new JsonlSplitter();
    expect(s.push('{"a":')).toEqual([]);
    expect(s.push('1}\r\n{"b":2}\r\r\n')).toEqual(['{"a":1}', '{"b":2}\r']);
  });

  it('decodes multi-byte UTF-8 split across byte chunks', () => {
    const s = new JsonlSplitter();
    const bytes = new TextEncoder().encode('{"e":"😀"}\n');
    const out = [...s.push(bytes.slice(0, 8)), ...s.push(bytes.slice(8))];
    expect(out).toEqual(['{"e":"😀"}']);
  });

  it('returns a truncated last record at EOF from flush, once', () => {
    const s = new JsonlSplitter();
    expect(s.push('{"ok":1}\n{"trunc')).toEqual(['{"ok":1}']);
    expect(s.flush()).toEqual(['{"trunc']);
    expect(s.flush()).toEqual([]);
  });
});
