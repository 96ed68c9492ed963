// A client of the Switchyard HTTP API the way an outside program sees it: JSON calls with a bearer
// token, and an SSE reader over fetch streams (`id:` / `event:` / `data:` frames, comment lines
// ignored) with deadlines — every wait polls a condition until a deadline, nothing sleeps to sync.

export interface SseEvent {
  id: string;
  event: string;
  /** `data:` parsed as JSON (the API always sends JSON). */
  data: Record<string, unknown>;
  /** performance.now() when the frame was complete in this process. */
  receivedAt: number;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Api {
  readonly base: string;
  readonly token: string | undefined;
  constructor(base: string, token?: string) {
    this.base = base;
    this.token = token;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.token !== undefined && { authorization: `Bearer ${this.token}` }), ...extra };
  }

  async call<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    extra: { headers?: Record<string, string>; raw?: string } = {},
  ): Promise<ApiResponse<T>> {
    const hasBody = body !== undefined || extra.raw !== undefined;
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: this.headers({ ...(hasBody && { 'content-type': 'application/json' }), ...extra.headers }),
      ...(hasBody && { body: extra.raw ?? JSON.stringify(body) }),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  static async login(base: string, username: string, password: string): Promise<Api> {
    const r = await new Api(base).call<{ token: string }>('POST', '/api/auth/login', { username, password });
    if (r.status !== 200) throw new Error(`login ${username}: ${r.status} ${r.text}`);
    return new Api(base, r.body.token);
  }

  as(token: string): Api {
    return new Api(this.base, token);
  }

  /** An SSE reader of a session's events (from the start, or after `lastEventId`). */
  events(sessionId: string, opts: { lastEventId?: string; after?: string } = {}): Promise<SseStream> {
    const q = opts.after !== undefined ? `?after=${opts.after}` : '';
    return SseStream.open(
      `${this.base}/api/sessions/${sessionId}/events${q}`,
      this.headers(opts.lastEventId !== undefined ? { 'last-event-id': opts.lastEventId } : {}),
    );
  }
}

export async function until<T>(
  what: string,
  f: () => T | undefined | false | Promise<T | undefined | false>,
  deadlineMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export class SseStream {
  readonly events: SseEvent[] = [];
  /** Comment lines (heartbeats) seen. */
  comments = 0;
  ended = false;
  error: unknown = undefined;
  private readonly waiters = new Set<() => void>();
  private readonly abort = new AbortController();
  private pump: Promise<void> = Promise.resolve();

  readonly status: number;
  readonly headers: Headers;
  private constructor(status: number, headers: Headers) {
    this.status = status;
    this.headers = headers;
  }

  static async open(url: string, headers: Record<string, string>, timeoutMs = 60_000): Promise<SseStream> {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(new Error(`no SSE response within ${timeoutMs} ms`)), timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ctl.signal });
    } finally {
      clearTimeout(timer);
    }
    const s = new SseStream(res.status, res.headers);
    s.abort.signal.addEventListener('abort', () => ctl.abort());
    if (res.status !== 200 || res.body === null) {
      s.ended = true;
      await res.text().catch(() => undefined);
      return s;
    }
    s.pump = s.read(res.body);
    return s;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let frame: { id?: string; event?: string; data: string[] } = { data: [] };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          let line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
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
            this.comments++;
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
      if (!this.abort.signal.aborted) this.error = err;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  get lastId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  /** Resolves with the first event matching `pred` (already received or arriving before the deadline). */
  waitFor(
    what: string,
    pred: (e: SseEvent, i: number, all: SseEvent[]) => boolean,
    timeoutMs = 60_000,
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
  waitForCount(n: number, timeoutMs = 60_000): Promise<SseEvent> {
    return this.waitFor(`${n} events`, (_e, i) => i >= n - 1, timeoutMs);
  }

  /** The turn.done of a message. */
  turnDone(messageId: string, timeoutMs = 90_000): Promise<SseEvent> {
    return this.waitFor(
      `turn.done of ${messageId}`,
      (e) => e.event === 'turn.done' && e.data.messageId === messageId,
      timeoutMs,
    );
  }

  /** Events carrying this messageId. */
  ofMessage(messageId: string): SseEvent[] {
    return this.events.filter((e) => e.data.messageId === messageId);
  }

  summary(): string {
    return JSON.stringify(
      this.events.map((e) => (e.event === 'session.status' ? `${e.event}:${String(e.data.state)}` : e.event)),
    ).slice(-3000);
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.pump.catch(() => undefined);
  }
}

export function textOf(events: SseEvent[]): string {
  return events.flatMap((e) => (e.event === 'text.delta' ? [String(e.data.text)] : [])).join('');
}
