import { describe, expect, it } from 'vitest';
import { draftIds } from '../src/chat/draft-id.ts';

function counter() {
  let n = 0;
  return () => `id-${++n}`;
}

describe('a draft’s clientMessageId', () => {
  it('stays the same for a resend of the same draft', () => {
    const ids = draftIds(counter());
    const images: unknown[] = [];
    expect(ids.idFor('hello', images)).toBe('id-1');
    expect(ids.idFor('hello', images)).toBe('id-1');
  });

  it('is new as soon as the text or the images changed, whenever the send comes', () => {
    const ids = draftIds(counter());
    const images: unknown[] = [];
    expect(ids.idFor('hell', images)).toBe('id-1');
    expect(ids.idFor('hello', images)).toBe('id-2');
    expect(ids.idFor('hello', [...images, 'a.png'])).toBe('id-3');
  });

  it('is new after the draft was accepted, even for the same text', () => {
    const ids = draftIds(counter());
    const images: unknown[] = [];
    expect(ids.idFor('again', images)).toBe('id-1');
    ids.sent();
    expect(ids.idFor('again', images)).toBe('id-2');
  });
});
