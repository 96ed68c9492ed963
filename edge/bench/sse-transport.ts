import { DurableObject } from 'cloudflare:workers';

// Benchmark entry for bench/fanout/transport.ts: the two ways an SSE viewer can be fed from a
// session's Durable Object, side by side in one workerd, with nothing else of the app around them.
//   /events/socket: what the edge does (edge/src/sessions/sse.ts): the Worker invocation holds the
//     SSE response and a hibernatable WebSocket to the object, and writes each binary frame it
//     gets into the response.
//   /events/stream: the object writes into the SSE response itself (the Worker returns the
//     object's streaming response), which keeps the object in memory while any viewer is open.
// `/burst?n=&pace=` sends n one-delta SSE frames to every viewer of both kinds, one send or write
// per viewer per frame (as the hub broadcasts), each stamped with the wall-clock time it was sent.

interface TransportEnv {
  HUB: DurableObjectNamespace<TransportHub>;
}

const encoder = new TextEncoder();

export class TransportHub extends DurableObject<TransportEnv> {
  #writers = new Set<WritableStreamDefaultWriter<Uint8Array>>();

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
        const writer = writable.getWriter();
        this.#writers.add(writer);
        const forget = () => this.#writers.delete(writer);
        writer.closed.then(forget, forget);
        writer.write(encoder.encode(': connected\n\n')).catch(forget);
        return new Response(readable, { headers: { 'content-type': 'text/event-stream' } });
      }
      case '/count':
        return Response.json({ viewers: this.ctx.getWebSockets('viewer').length + this.#writers.size });
      case '/burst': {
        const n = Number(url.searchParams.get('n') ?? '1');
        const pace = Number(url.searchParams.get('pace') ?? '0');
        for (let i = 0; i < n; i++) {
          const bytes = encoder.encode(
            `id: ${String(i).padStart(26, '0')}\nevent: text.delta\ndata: {"type":"text.delta","messageId":"m","text":"word ","sentAt":${Date.now()}}\n\n`,
          );
          for (const ws of this.ctx.getWebSockets('viewer')) ws.send(bytes);
          for (const writer of this.#writers) writer.write(bytes).catch(() => this.#writers.delete(writer));
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

/** The edge's relay (edge/src/sessions/sse.ts) without its cursor, heartbeat and access checks. */
async function socketViewer(hub: DurableObjectStub<TransportHub>): Promise<Response> {
  const upgraded = await hub.fetch('http://hub/socket', { headers: { upgrade: 'websocket' } });
  const ws = upgraded.webSocket;
  if (ws === null) return new Response('no socket', { status: 502 });
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const shutdown = () => {
    try {
      ws.close(1000, 'viewer gone');
    } catch {
      // already closed
    }
    writer.close().catch(() => undefined);
  };
  ws.binaryType = 'arraybuffer';
  ws.accept();
  ws.addEventListener('message', (e) => {
    if (e.data instanceof ArrayBuffer) writer.write(new Uint8Array(e.data)).catch(shutdown);
  });
  ws.addEventListener('close', shutdown);
  writer.closed.catch(shutdown);
  writer.write(encoder.encode(': connected\n\n')).catch(shutdown);
  return new Response(readable, { headers: { 'content-type': 'text/event-stream' } });
}

export default {
  fetch(request, env) {
    const hub = env.HUB.get(env.HUB.idFromName('session'));
    const { pathname, search } = new URL(request.url);
    if (pathname === '/events/socket') return socketViewer(hub);
    if (pathname === '/events/stream') return hub.fetch('http://hub/stream');
    return hub.fetch(`http://hub${pathname}${search}`);
  },
} satisfies ExportedHandler<TransportEnv>;
