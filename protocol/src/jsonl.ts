/**
 * Splits a byte/char stream into JSONL records on LF only. Node's `readline`
 * also breaks on U+2028/U+2029, which are legal inside JSON strings, so it
 * would corrupt records (DESIGN invariant 5).
 */
export class JsonlSplitter {
  private buffer = '';
  private readonly decoder = new TextDecoder('utf-8');

  push(chunk: string | Uint8Array): string[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const lines: string[] = [];
    let start = 0;
    for (let nl = this.buffer.indexOf('\n', start); nl !== -1; nl = this.buffer.indexOf('\n', start)) {
      lines.push(stripCr(this.buffer.slice(start, nl)));
      start = nl + 1;
    }
    this.buffer = this.buffer.slice(start);
    return lines.filter((l) => l.length > 0);
  }

  /** The unterminated tail at EOF, if any (a truncated last record). */
  flush(): string[] {
    const rest = stripCr(this.buffer + this.decoder.decode());
    this.buffer = '';
    return rest.length > 0 ? [rest] : [];
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
