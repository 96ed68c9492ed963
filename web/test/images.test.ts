import { MAX_IMAGES_PER_MESSAGE } from '@switchyard/protocol/limits';
import { describe, expect, it } from 'vitest';
import { bodyBytes, checkFiles } from '../src/chat/images.ts';

const png = (size: number, name = 'a.png') => ({ name, type: 'image/png', size });

describe('image limits (checked before upload)', () => {
  it('accepts the API’s image types within the count and size budget', () => {
    expect(checkFiles([png(1000), { name: 'b.webp', type: 'image/webp', size: 10 }], 0, 100_000)).toBeNull();
  });

  it('refuses other types, naming the file', () => {
    expect(checkFiles([{ name: 'notes.txt', type: 'text/plain', size: 5 }], 0, 1e6)).toMatch(
      /^notes\.txt: only PNG, JPEG, GIF, WEBP/,
    );
    expect(checkFiles([{ name: 'x.svg', type: 'image/svg+xml', size: 5 }], 0, 1e6)).toMatch(/^x\.svg:/);
  });

  it('refuses more images than a message may carry', () => {
    expect(checkFiles([png(1)], MAX_IMAGES_PER_MESSAGE, 1e6)).toBe(
      `at most ${MAX_IMAGES_PER_MESSAGE} images per message`,
    );
    expect(checkFiles([png(1)], MAX_IMAGES_PER_MESSAGE - 1, 1e6)).toBeNull();
  });

  it('counts the base64 size against the budget', () => {
    expect(checkFiles([png(3000)], 0, 4000)).toBeNull();
    expect(checkFiles([png(3003)], 0, 4000)).toMatch(/too large/);
  });

  it('measures a body as the JSON the API will receive, in bytes', () => {
    const plain = bodyBytes('hi', []);
    expect(bodyBytes('héllo', []) - bodyBytes('hello', [])).toBe(1);
    expect(bodyBytes('hi', [{ data: 'A'.repeat(1000) }]) - plain).toBeGreaterThanOrEqual(1000);
  });
});
