import { SseCursor, viewerFrameToSse } from '../hub/viewer-frames.ts';

// The SSE half of the fan-out (DESIGN.md "Data path"): this Worker invocation holds the
// browser's response and one hibernatable WebSocket to the session's hub (tag `viewer`). The
// hub replays what the client missed on that socket, then broadcasts; this side writes the SSE
// bytes the hub rendered (after the client's cursor, viewer-frames.ts) and keeps the stream alive
// with heartbeat comments.

/** Longest heartbeat interval allowed: proxies drop silent streams near 100 s; the API promises 30. */
export const MAX_HEARTBEAT_MS = 30_000;
export const DEFAULT_HEARTBEAT_MS = 15_000;
/** A client this far behind is cut off; it reconnects with Last-Event-ID and replays. */
const MAX_BACKLOG_BYTES = 8 * 1024 * 1024;

export function heartbeatMs(env: Env): number {
  const raw = env.SSE_HEARTBEAT_SECONDS;
  const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw) * 1000;
  if (!Number.isFinite(n) || n <= 0) return DEFAULT_HEARTBEAT_MS;
  return Math.min(MAX_HEARTBEAT_MS, Math.max(10, Math.round(n)));
}

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  // nginx and friends: do not buffer the stream
  'X-Accel-Buffering': 'no',
};

/**
 * Bridges a hub viewer socket (already returned by the hub's 101) to an SSE body. `after` is
 * the last id the client has; anything at or below it is never written twice.
 */
export function sseFromViewer(
  ws: WebSocket,
  opts: {
    after: string | null;
    /** Pass the hub's presence frames on as `event: presence` (clients opt in: they carry no id). */
    presence?: boolean;
    heartbeatMs: number;
    signal?: AbortSignal;
    /**
     * Asked on every heartbeat whether the caller may still read this stream (token not revoked or
     * expired, user not disabled, still owner or admin); false ends it. A stream outlives the
     * request that authorized it, so without this a revoked token kept reading.
     */
    stillAllowed?: () => Promise<boolean>;
  },
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const cursor = new SseCursor(opts.after);
  let closed = false;
  let backlog = 0;

  const shutdown = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    try {
      ws.close(1000, 'stream closed');
    } catch {
      // already closed
    }
    writer.close().catch(() => undefined);
  };
  const writeBytes = (bytes: Uint8Array) => {
    if (closed) return;
    backlog += bytes.byteLength;
    writer.write(bytes).then(
      () => {
        backlog -= bytes.byteLength;
      },
      () => shutdown(),
    );
    if (backlog > MAX_BACKLOG_BYTES) shutdown();
  };
  const write = (text: string) => writeBytes(encoder.encode(text));
  const frameOpts = { presence: opts.presence === true, now: Date.now };

  // Frames are binary; the standard default would hand each one over as a Blob.
  ws.binaryType = 'arraybuffer';
  ws.accept();
  ws.addEventListener('message', (e) => {
    if (!(e.data instanceof ArrayBuffer)) return;
    const bytes = viewerFrameToSse(e.data, cursor, frameOpts);
    if (bytes !== null) writeBytes(bytes);
  });
  ws.addEventListener('close', shutdown);
  ws.addEventListener('error', shutdown);
  // A client that went away cancels the body: end at once, not at the next write, so its hub
  // socket and this invocation go with it.
  writer.closed.catch(shutdown);
  opts.signal?.addEventListener('abort', shutdown);
  let checking = false;
  const heartbeat = () => {
    write(': heartbeat\n\n');
    if (opts.stillAllowed === undefined || checking || closed) return;
    checking = true;
    opts
      .stillAllowed()
      .then(
        (ok) => {
          if (!ok) {
            write(': access revoked\n\n');
            shutdown();
          }
        },
        // A failed check (D1 hiccup) is not a revocation; the next heartbeat asks again.
        () => undefined,
      )
      .finally(() => {
        checking = false;
      });
  };
  const timer = setInterval(heartbeat, opts.heartbeatMs);
  // Flushes the headers at once, so a client knows it is connected before the first event.
  write(': connected\n\n');
  return readable;
}
