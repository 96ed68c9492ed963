import { SseReader, type SseEvent } from './sse.ts';

// A client of the Switchyard HTTP API the way an outside program sees it: JSON calls with a bearer
// token, and a session's events through the shared SSE reader (sse.ts); waits have deadlines and
// nothing sleeps to sync.

export { until } from './poll.ts';
export type { SseEvent } from './sse.ts';

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
    /** `chunked`: the body is streamed in pieces with no Content-Length. */
    extra: { headers?: Record<string, string>; raw?: string; chunked?: boolean } = {},
  ): Promise<ApiResponse<T>> {
    const hasBody = body !== undefined || extra.raw !== undefined;
    const payload = extra.raw ?? JSON.stringify(body);
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: this.headers({ ...(hasBody && { 'content-type': 'application/json' }), ...extra.headers }),
      ...(hasBody && { body: extra.chunked === true ? inPieces(payload) : payload }),
      // Node's fetch requires it for a stream body; the DOM RequestInit type does not list it.
      ...{ duplex: 'half' },
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

/** A request body sent 64 KiB at a time as a stream, so fetch sends it chunked. */
function inPieces(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 65536));
      at += 65536;
    },
  });
}

/** A session's event stream over fetch: the shared reader plus the response and the API's shapes. */
export class SseStream extends SseReader {
  readonly status: number;
  readonly headers: Headers;
  private constructor(status: number, headers: Headers, body: ReadableStream<Uint8Array>) {
    // Real CLIs answer in seconds, not milliseconds: waits default to a minute.
    super(body, { timeoutMs: 60_000 });
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
    if (res.status !== 200 || res.body === null) {
      await res.text().catch(() => undefined);
      return new SseStream(res.status, res.headers, new ReadableStream({ start: (c) => c.close() }));
    }
    return new SseStream(res.status, res.headers, res.body);
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
}

export function textOf(events: SseEvent[]): string {
  return events.flatMap((e) => (e.event === 'text.delta' ? [String(e.data.text)] : [])).join('');
}
