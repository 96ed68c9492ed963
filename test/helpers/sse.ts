// The one SSE reader of the edge (workerd), runner and cross-package tests: it reads a
// text/event-stream body (`id:` / `event:` / `data:` frames, `:` comment lines kept), keeps every
// event with the time it arrived, and lets a test wait for an event rather than sleep. Web APIs
// only (ReadableStream, TextDecoder), so it runs in workerd and Node alike.

export interface SseEvent {
  /** `''` for a frame without `id:` (the API's presence frames). */
  id: string;
  /** `message` for a frame without `event:`, as EventSource does. */
  event: string;
  /** `data:` parsed as JSON (the API always sends JSON). */
  data: Record<string, unknown>;
  /** performance.now() when the frame was complete in this process. */
  receivedAt: number;
}

export class SseReader {
  readonly events: SseEvent[] = [];
  /** Comment lines without the colon, trimmed (`connected`, `heartbeat`, ...). */
  readonly comments: string[] = [];
  /** Everything read so far, as text. */
  raw = '';
  ended = false;
  error: unknown = undefined;
  private readonly waiters = new Set<() => void>();
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly pump: Promise<void>;
  private cancelled = false;
  /** How long a wait may take when the caller names no deadline. */
  private readonly timeoutMs: number;

  constructor(body: ReadableStream<Uint8Array>, opts: { timeoutMs?: number } = {}) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.reader = body.getReader();
    this.pump = this.read();
  }

  private async read(): Promise<void> {
    const dec = new TextDecoder();
    let buf = '';
    let frame: { id?: string; event?: string; data: string[] } = { data: [] };
    try {
      for (;;) {
        const { value, done } = await this.reader.read();
        if (done) break;
        const text = dec.decode(value, { stream: true });
        this.raw += text;
        buf += text;
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          let line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          nl = buf.indexOf('\n');
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (frame.data.length > 0 || frame.id !== undefined) {
              this.events.push({
                id: frame.id ?? '',
                event: frame.event ?? 'message',
                data: JSON.parse(frame.data.join('\n')) as Record<string, unknown>,
                receivedAt: performance.now(),
              });
              this.wake();
            }
            frame = { data: [] };
          } else if (line.startsWith(':')) {
            this.comments.push(line.slice(1).trim());
            this.wake();
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let v = colon < 0 ? '' : line.slice(colon + 1);
            if (v.startsWith(' ')) v = v.slice(1);
            if (field === 'id') frame.id = v;
            else if (field === 'event') frame.event = v;
            else if (field === 'data') frame.data.push(v);
          }
        }
      }
    } catch (err) {
      if (!this.cancelled) this.error = err;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  /** Settles when the stream has ended: its end, a broken connection (see `error`) or close(). */
  get finished(): Promise<void> {
    return this.pump;
  }

  get lastId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  /** Resolves with the first event matching `pred` (already received or arriving before the deadline). */
  waitFor(
    what: string,
    pred: (e: SseEvent, i: number, all: SseEvent[]) => boolean,
    timeoutMs = this.timeoutMs,
  ): Promise<SseEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.events.find((e, i, all) => pred(e, i, all));
        if (hit) {
          done();
          resolve(hit);
        } else if (this.ended) {
          done();
          reject(
            new Error(`SSE stream ended (${String(this.error ?? 'closed')}) before ${what}; got ${this.summary()}`),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${this.summary()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Waits until at least `n` events have arrived. */
  waitForCount(n: number, timeoutMs = this.timeoutMs): Promise<SseEvent> {
    return this.waitFor(`${n} events`, (_e, i) => i >= n - 1, timeoutMs);
  }

  ofType(type: string): SseEvent[] {
    return this.events.filter((e) => e.event === type);
  }

  /** The event types received, with the state of each session.status (for failure messages). */
  summary(): string {
    return JSON.stringify(
      this.events.map((e) => (e.event === 'session.status' ? `${e.event}:${String(e.data.state)}` : e.event)),
    ).slice(-3000);
  }

  async close(): Promise<void> {
    this.cancelled = true;
    await this.reader.cancel().catch(() => undefined);
    await this.pump;
  }
}
