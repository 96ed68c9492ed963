import { DurableObject } from 'cloudflare:workers';
import { SseCursor, toViewerFrames, viewerFrameToSse } from '../src/hub/viewer-frames.ts';
import { SSE_HEADERS } from '../src/sessions/sse.ts';
import { relayedViewer } from './relayed-viewer.ts';

// Benchmark entry for bench/fanout/transport.ts: the two ways an SSE viewer can be fed from a
// session's Durable Object, side by side in one workerd, with no auth, no log and no replay around
// them. Both carry the hub's own viewer frames (`toViewerFrames`), cut after each viewer's cursor
// by the edge's own code (`viewerFrameToSse`):
//   /events/socket: what the edge does: the Worker invocation holds the SSE response and a
//     hibernatable WebSocket to the object (`sseFromViewer`, edge/src/sessions/sse.ts);
//   /events/stream: the object writes into the SSE response itself (the Worker returns the
//     object's streaming response), which keeps the object in memory while any viewer is open.
// `/burst?n=&pace=` sends n one-delta frames to every viewer of both kinds, one send or write per
// viewer per frame (as the hub broadcasts), each stamped with the wall-clock time it was sent.

interface TransportEnv {
  HUB: DurableObjectNamespace<TransportHub>;
}

export class TransportHub extends DurableObject<TransportEnv> {
  #streams = new Set<{ writer: WritableStreamDefaultWriter<Uint8Array>; cursor: SseCursor }>();
  /** Event ids go on rising across bursts: a viewer's cursor drops what it already had. */
  #nextId = 0;

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    switch (url.pathname) {
      case '/socket': {
        const pair = new WebSocketPair();
        this.ctx.acceptWebSocket(pair[1], ['viewer']);
        return new Response(null, { status: 101, webSocket: pair[0] });
      }
      case '/stream': {
        const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
        const stream = { writer: writable.getWriter(), cursor: new SseCursor(null) };
        this.#streams.add(stream);
        const forget = () => this.#streams.delete(stream);
        stream.writer.closed.then(forget, forget);
        stream.writer.write(new TextEncoder().encode(': connected\n\n')).catch(forget);
        return new Response(readable, { headers: SSE_HEADERS });
      }
      case '/count':
        return Response.json({ viewers: this.ctx.getWebSockets('viewer').length + this.#streams.size });
      case '/burst': {
        const n = Number(url.searchParams.get('n') ?? '1');
        const pace = Number(url.searchParams.get('pace') ?? '0');
        for (let i = 0; i < n; i++) {
          const event = {
            id: String(this.#nextId++).padStart(26, '0'),
            type: 'text.delta',
            data: JSON.stringify({ type: 'text.delta', messageId: 'm', text: 'word ', sentAt: Date.now() }),
          };
          for (const frame of toViewerFrames([event])) {
            for (const ws of this.ctx.getWebSockets('viewer')) ws.send(frame);
            for (const stream of this.#streams) {
              const bytes = viewerFrameToSse(frame, stream.cursor, { presence: false, now: Date.now });
              if (bytes !== null) stream.writer.write(bytes).catch(() => this.#streams.delete(stream));
            }
          }
          if (pace > 0) await new Promise((resolve) => setTimeout(resolve, pace));
        }
        return new Response('sent');
      }
      default:
        return new Response('not found', { status: 404 });
    }
  }

  override webSocketClose(ws: WebSocket): void {
    ws.close();
  }
}

export default {
  fetch(request, env) {
    const hub = env.HUB.get(env.HUB.idFromName('session'));
    const { pathname, search } = new URL(request.url);
    if (pathname === '/events/socket') return relayedViewer(hub, 'http://hub/socket');
    if (pathname === '/events/stream') return hub.fetch('http://hub/stream');
    return hub.fetch(`http://hub${pathname}${search}`);
  },
} satisfies ExportedHandler<TransportEnv>;
