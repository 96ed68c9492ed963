import { describe, expect, it } from 'vitest';
import { fromBase64, fromBase64Url, toBase64, toBase64Url, toHex } from '../src/index.ts';

describe('byte encodings', () => {
  const bytes = new Uint8Array([0, 1, 0xfb, 0xff, 0x3e, 0x3f, 0x7f]);
  it('base64 and base64url round-trip and match Node', () => {
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
    expect(toBase64Url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
    expect(fromBase64(toBase64(bytes))).toEqual(bytes);
    expect(fromBase64Url(toBase64Url(bytes))).toEqual(bytes);
    expect(toHex(bytes)).toBe(Buffer.from(bytes).toString('hex'));
  });
  it('refuses what is not its alphabet', () => {
    expect(fromBase64('not base64!')).toBeNull();
    expect(fromBase64Url('a+b/')).toBeNull();
    expect(fromBase64Url('YQ==')).toBeNull();
  });
});
