// One session's live event stream, kept connected: fetch + a streaming body (not EventSource,
// which hides heartbeats and cannot be told the network went away). Every (re)connect sends
// Last-Event-ID, so the hub replays exactly what this page has not seen; ids at or below the
// last one delivered are dropped, so nothing is shown twice. Cut-offs are noticed three ways:
// the body ends or errors, no byte (event or heartbeat comment) arrives within the heartbeat
// deadline, or the browser reports it went offline.
import type { AgentEvent, Presence } from '@switchyard/protocol';
import { SseParser } from './sse-parser.ts';

/** An event as the API sends it: the normalized event, its log id, and the message it answers. */
export type StreamEvent = AgentEvent & { id: string; messageId?: string };

export type StreamStatus =
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'reconnecting'; reason: string; retryInMs: number }
  | { state: 'closed'; reason: 'unauthenticated' | 'gone' | 'stopped' };

export interface SessionStreamOptions {
  sessionId: string;
  /** Resume after this id (what the page already shows). */
  after?: string | null;
  onEvents: (events: StreamEvent[]) => void;
  onStatus: (s: StreamStatus) => void;
  /** Who is watching, each time someone joins or leaves. */
  onPresence?: (p: Presence) => void;
  /** The server promises a heartbeat at least every 30 s; silence past this means a dead link. */
  silenceMs?: number;
  fetch?: typeof fetch;
}

const DEFAULT_SILENCE_MS = 45_000;
const BACKOFF_MS = [500, 1_000, 2_000, 5_000, 10_000];

export class SessionStream {
  private lastId: string | null;
  private abort: AbortController | null = null;
  private stopped = false;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private silenceTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly silenceMs: number;
  private readonly doFetch: typeof fetch;
  private readonly opts: SessionStreamOptions;

  constructor(opts: SessionStreamOptions) {
    this.opts = opts;
    this.lastId = opts.after ?? null;
    this.silenceMs = opts.silenceMs ?? DEFAULT_SILENCE_MS;
    this.doFetch = opts.fetch ?? fetch.bind(globalThis);
  }

  get lastEventId(): string | null {
    return this.lastId;
  }

  start(): void {
    addEventListener('offline', this.onOffline);
    addEventListener('online', this.onOnline);
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    removeEventListener('offline', this.onOffline);
    removeEventListener('online', this.onOnline);
    clearTimeout(this.retryTimer);
    clearTimeout(this.silenceTimer);
    this.abort?.abort();
    this.opts.onStatus({ state: 'closed', reason: 'stopped' });
  }

  private readonly onOffline = () => this.cut('you are offline', true);
  private readonly onOnline = () => {
    clearTimeout(this.retryTimer);
    this.attempt = 0;
    void this.connect();
  };

  /** Drops the current connection and schedules the next (or waits for `online`). */
  private cut(reason: string, waitForOnline = false): void {
    if (this.stopped) return;
    this.abort?.abort();
    this.abort = null;
    clearTimeout(this.silenceTimer);
    clearTimeout(this.retryTimer);
    if (waitForOnline || navigator.onLine === false) {
      this.opts.onStatus({ state: 'reconnecting', reason, retryInMs: 0 });
      return;
    }
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)] ?? 10_000;
    this.attempt++;
    this.opts.onStatus({ state: 'reconnecting', reason, retryInMs: delay });
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }

  private armSilence(ctrl: AbortController): void {
    clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => {
      if (this.abort === ctrl) this.cut('no heartbeat from the server');
    }, this.silenceMs);
  }

  /** `continuing`: the last connection ended after delivering events (a replay page), so the rest follows at once. */
  private async connect(continuing = false): Promise<void> {
    if (this.stopped) return;
    this.abort?.abort();
    const ctrl = new AbortController();
    this.abort = ctrl;
    if (!continuing) this.opts.onStatus({ state: 'connecting' });
    let res: Response;
    try {
      res = await this.doFetch(
        `/api/sessions/${encodeURIComponent(this.opts.sessionId)}/events${this.opts.onPresence ? '?presence=1' : ''}`,
        {
          headers: { Accept: 'text/event-stream', ...(this.lastId !== null && { 'Last-Event-ID': this.lastId }) },
          credentials: 'same-origin',
          cache: 'no-store',
          signal: ctrl.signal,
        },
      );
    } catch {
      if (this.abort === ctrl) this.cut('cannot reach the server');
      return;
    }
    if (this.abort !== ctrl) return;
    if (res.status === 401) return this.close('unauthenticated');
    if (res.status === 404) return this.close('gone');
    if (!res.ok || res.body === null) return this.cut(`the server answered ${res.status}`);
    this.attempt = 0;
    if (!continuing) this.opts.onStatus({ state: 'live' });
    this.armSilence(ctrl);
    const delivered = await this.read(res.body, ctrl);
    if (this.abort !== ctrl) return;
    // The hub replays a long log a page per connection and then closes it: go straight on from
    // the last id. A connection that ended without delivering anything backs off instead.
    if (delivered) void this.connect(true);
    else this.cut('the connection closed');
  }

  private close(reason: 'unauthenticated' | 'gone'): void {
    this.stopped = true;
    this.abort = null;
    clearTimeout(this.silenceTimer);
    this.opts.onStatus({ state: 'closed', reason });
  }

  private presence(data: string): void {
    try {
      this.opts.onPresence?.(JSON.parse(data) as Presence);
    } catch {
      // a malformed presence line only costs the indicator
    }
  }

  /** Reads until the body ends or breaks; whether it delivered any new event. */
  private async read(body: ReadableStream<Uint8Array>, ctrl: AbortController): Promise<boolean> {
    let delivered = false;
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (this.abort !== ctrl) return delivered;
        this.armSilence(ctrl);
        const fresh: StreamEvent[] = [];
        for (const item of parser.push(decoder.decode(value, { stream: true }))) {
          if (item.kind !== 'event') continue;
          if (item.event === 'presence' && item.id === null) {
            this.presence(item.data);
            continue;
          }
          if (item.id === null) continue;
          if (this.lastId !== null && item.id <= this.lastId) continue;
          let data: unknown;
          try {
            data = JSON.parse(item.data);
          } catch {
            continue;
          }
          this.lastId = item.id;
          fresh.push({ ...(data as AgentEvent), id: item.id });
        }
        if (fresh.length > 0) {
          delivered = true;
          this.opts.onEvents(fresh);
        }
      }
    } catch {
      // aborted, or the connection broke: the caller reconnects
    } finally {
      reader.releaseLock();
    }
    return delivered;
  }
}
