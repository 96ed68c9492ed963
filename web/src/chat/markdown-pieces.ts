// Pure: where streaming Markdown can be cut into independently rendered pieces.

/**
 * Splits Markdown at blank lines outside code fences. Each piece renders (and is memoized) on its
 * own, so while an answer streams only its last piece is parsed again: a 2,000-delta answer costs
 * a small, constant amount per frame instead of re-rendering everything said so far.
 */
export function markdownPieces(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  let inFence = false;
  let lineStart = 0;
  while (lineStart <= text.length) {
    const nl = text.indexOf('\n', lineStart);
    const end = nl === -1 ? text.length : nl;
    const line = text.slice(lineStart, end);
    if (/^ {0,3}(```|~~~)/.test(line)) inFence = !inFence;
    else if (!inFence && line.trim() === '') {
      // The piece ends before the newline that precedes this blank line.
      if (lineStart - 1 > start) pieces.push(text.slice(start, lineStart - 1));
      start = end + 1;
    }
    if (nl === -1) break;
    lineStart = nl + 1;
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces.filter((p) => p.trim() !== '');
}
