import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SessionStream, type StreamEvent, type StreamStatus } from '../src/stream/session-stream.ts';

// The stream client against a scripted fetch: each call answers with the next scripted body
// (SSE text) or status, and records the Last-Event-ID it was sent.

/** `body: 'open'` is a body that never ends (a live stream with nothing to say). */
type Answer = { status: number; body?: string | 'open' };

function scriptedFetch(answers: Answer[]) {
  const sent: Array<string | null> = [];
  const f = vi.fn(async (_url: string | URL | Request, init?: RequestInit) => {
    sent.push(new Headers(init?.headers).get('Last-Event-ID'));
    const a = answers.shift();
    if (a === undefined) return new Promise<Response>(() => undefined); // stays connected
    const body = a.body === 'open' ? new ReadableStream<Uint8Array>() : (a.body ?? null);
    return new Response(body, { status: a.status });
  });
  return { fetch: f as unknown as typeof fetch, sent };
}

const sse = (...events: Array<[string, object]>) =>
  events.map(([id, e]) => `id: ${id}\nevent: x\ndata: ${JSON.stringify(e)}\n\n`).join('');
const delta = (text: string) => ({ type: 'text.delta', index: 0, text });

function collect(f: typeof fetch, after: string | null = null) {
  const events: StreamEvent[] = [];
  const statuses: StreamStatus[] = [];
  const stream = new SessionStream({
    sessionId: 'S',
    after,
    fetch: f,
    onEvents: (e) => events.push(...e),
    onStatus: (s) => statuses.push(s),
  });
  return { stream, events, statuses };
}

beforeEach(() => {
  // Node has no window: the stream listens for online/offline on the global object.
  vi.stubGlobal('addEventListener', () => undefined);
  vi.stubGlobal('removeEventListener', () => undefined);
});
afterEach(() => vi.unstubAllGlobals());

describe('SessionStream', () => {
  it('follows a paged replay at once, sending the last id each time, and drops what it already has', async () => {
    const { fetch, sent } = scriptedFetch([
      { status: 200, body: sse(['01A', delta('a')], ['01B', delta('b')]) },
      // The next page overlaps by one event: it is not delivered twice.
      { status: 200, body: sse(['01B', delta('b')], ['01C', delta('c')]) },
    ]);
    const { stream, events, statuses } = collect(fetch);
    stream.start();
    await vi.waitFor(() => expect(events.map((e) => e.id)).toEqual(['01A', '01B', '01C']));
    await vi.waitFor(() => expect(sent).toEqual([null, '01B', '01C']));
    expect(events.map((e) => (e as { text?: string }).text)).toEqual(['a', 'b', 'c']);
    // Page boundaries are not shown to the person as reconnects.
    expect(statuses.filter((s) => s.state === 'reconnecting')).toEqual([]);
    stream.stop();
  });

  it('resumes after the id it was given, and backs off when a connection ends with nothing new', async () => {
    vi.useFakeTimers();
    try {
      const { fetch, sent } = scriptedFetch([
        { status: 200, body: ': heartbeat\n\n' },
        { status: 503 },
        { status: 200, body: sse(['01Z', delta('z')]) },
      ]);
      const { stream, events, statuses } = collect(fetch, '01Y');
      stream.start();
      await vi.waitFor(() => expect(statuses.at(-1)).toMatchObject({ state: 'reconnecting', retryInMs: 500 }));
      await vi.advanceTimersByTimeAsync(500);
      await vi.waitFor(() =>
        expect(statuses.at(-1)).toMatchObject({
          state: 'reconnecting',
          reason: 'the server answered 503',
          retryInMs: 1000,
        }),
      );
      await vi.advanceTimersByTimeAsync(1000);
      await vi.waitFor(() => expect(events.map((e) => e.id)).toEqual(['01Z']));
      expect(sent.slice(0, 3)).toEqual(['01Y', '01Y', '01Y']);
      stream.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('reconnects when the server goes silent past the heartbeat deadline', async () => {
    vi.useFakeTimers();
    try {
      const { fetch, sent } = scriptedFetch([{ status: 200, body: 'open' }]);
      const statuses: StreamStatus[] = [];
      const stream = new SessionStream({
        sessionId: 'S',
        fetch,
        silenceMs: 1000,
        onEvents: () => undefined,
        onStatus: (s) => statuses.push(s),
      });
      stream.start();
      await vi.waitFor(() => expect(statuses.at(-1)?.state).toBe('live'));
      await vi.advanceTimersByTimeAsync(1000);
      expect(statuses.at(-1)).toMatchObject({ state: 'reconnecting', reason: 'no heartbeat from the server' });
      await vi.advanceTimersByTimeAsync(500);
      expect(sent).toHaveLength(2);
      stream.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks for presence only when it has a listener, and keeps it out of the event ids', async () => {
    const body = `event: presence\ndata: {"viewers":[{"name":"ada","streams":2}]}\n\n${sse(['01A', delta('a')])}`;
    const { fetch } = scriptedFetch([{ status: 200, body }]);
    const events: StreamEvent[] = [];
    const seen: unknown[] = [];
    const stream = new SessionStream({
      sessionId: 'S',
      fetch,
      onEvents: (e) => events.push(...e),
      onStatus: () => undefined,
      onPresence: (p) => seen.push(p),
    });
    stream.start();
    await vi.waitFor(() => expect(events.map((e) => e.id)).toEqual(['01A']));
    expect(seen).toEqual([{ viewers: [{ name: 'ada', streams: 2 }] }]);
    expect(String(vi.mocked(fetch).mock.calls[0]![0])).toBe('/api/sessions/S/events?presence=1');
    expect(stream.lastEventId).toBe('01A');
    stream.stop();
    const plain = scriptedFetch([{ status: 200, body: 'open' }]);
    const quiet = collect(plain.fetch);
    quiet.stream.start();
    await vi.waitFor(() => expect(vi.mocked(plain.fetch).mock.calls).toHaveLength(1));
    expect(String(vi.mocked(plain.fetch).mock.calls[0]![0])).toBe('/api/sessions/S/events');
    quiet.stream.stop();
  });

  it('ends for good on 404 (session deleted) and on 401', async () => {
    for (const [status, reason] of [
      [404, 'gone'],
      [401, 'unauthenticated'],
    ] as const) {
      const { fetch, sent } = scriptedFetch([{ status }]);
      const { stream, statuses } = collect(fetch);
      stream.start();
      await vi.waitFor(() => expect(statuses.at(-1)).toEqual({ state: 'closed', reason }));
      expect(sent).toHaveLength(1);
    }
  });
});
