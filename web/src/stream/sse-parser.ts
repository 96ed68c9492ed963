// Server-sent events framing (the WHATWG event-stream format), pure: text chunks in, complete
// events and comments out. Lines end in LF, CRLF or CR; a blank line dispatches. Unlike
// EventSource, an `id:` belongs to its own frame only (the API puts one on every event, and an
// event without one is not resumable, so the caller skips it).

type SseItem = { kind: 'event'; id: string | null; event: string; data: string } | { kind: 'comment'; text: string };

export class SseParser {
  private buf = '';
  private id: string | null = null;
  private event = '';
  private data: string[] = [];
  /** A chunk ended in CR: an LF starting the next chunk belongs to it. */
  private pendingCr = false;

  push(chunk: string): SseItem[] {
    let text = chunk;
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buf += text;
    const out: SseItem[] = [];
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const ch = this.buf.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      this.line(this.buf.slice(start, i), out);
      if (ch === 13) {
        if (i + 1 < this.buf.length) {
          if (this.buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  private line(line: string, out: SseItem[]): void {
    if (line === '') {
      if (this.data.length > 0)
        out.push({ kind: 'event', id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      this.id = null;
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) {
      out.push({ kind: 'comment', text: line.slice(1).trimStart() });
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}
