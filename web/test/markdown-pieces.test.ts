import { describe, expect, it } from 'vitest';
import { markdownPieces } from '../src/chat/markdown-pieces.ts';

describe('markdownPieces', () => {
  it('splits at blank lines, never inside a code fence', () => {
    const text = 'Intro para\nstill intro\n\n```ts\nconst a = 1;\n\nconst b = 2;\n```\n\n- one\n- two\n\n\nEnd';
    expect(markdownPieces(text)).toEqual([
      'Intro para\nstill intro',
      '```ts\nconst a = 1;\n\nconst b = 2;\n```',
      '- one\n- two',
      'End',
    ]);
  });

  it('loses no character but the separating blank lines', () => {
    const text = 'a\n\nb\n\n~~~\nx\n\ny\n~~~\nc';
    expect(markdownPieces(text).join('\n\n')).toBe(text);
  });

  it('keeps a growing answer’s earlier pieces identical (so they are not rendered again)', () => {
    const first = markdownPieces('Para one.\n\nPara tw');
    const later = markdownPieces('Para one.\n\nPara two is longer now.');
    expect(later[0]).toBe(first[0]);
    expect(markdownPieces('')).toEqual([]);
  });
});
