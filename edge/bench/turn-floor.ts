import { DurableObject } from 'cloudflare:workers';
import { nextUlid } from '../src/hub/ulid.ts';
import { toViewerFrames } from '../src/hub/viewer-frames.ts';
import { relayedViewer } from './relayed-viewer.ts';

// Benchmark entry for bench/e2e/floor.ts: a turn's way through the platform with none of the app
// around it, the floor under the warm first delta. A message is POSTed to the Worker, which reads
// its JSON body and calls the session's Durable Object (RPC, as the edge does); the object sends it
// on a hibernatable WebSocket to a peer standing in for the runner, which answers at once with a
// delta; the object sends the delta on to the measured way's viewer socket as the hub's own viewer
// frames (`toViewerFrames`), and the Worker relays them into the SSE response with the edge's own
// `sseFromViewer`. No auth, no D1, no checks, no runner, no CLI. With `durable`, the object also
// writes the message and the delta to SQLite before sending each on, as the hub logs both (so each
// send waits on the output gate, as the hub's do).

interface FloorEnv {
  HUB: DurableObjectNamespace<FloorHub>;
}

interface Turn {
  messageId: string;
  text: string;
  durable: boolean;
  /**
   * The way the bench measures (through wrangler dev's proxy or straight): the message goes to
   * that way's peer, linked the same way as a runner dials the origin its message came through,
   * and the answer to that way's one viewer, one delivery a delta.
   */
  way: string;
}

export class FloorHub extends DurableObject<FloorEnv> {
  #lastId: string | null = null;

  constructor(ctx: DurableObjectState, env: FloorEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(
      'CREATE TABLE IF NOT EXISTS log (id TEXT PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL)',
    );
  }

  #id(): string {
    this.#lastId = nextUlid(Date.now(), this.#lastId);
    return this.#lastId;
  }

  #log(type: string, data: string): string {
    const id = this.#id();
    this.ctx.storage.sql.exec('INSERT INTO log (id, type, data) VALUES (?, ?, ?)', id, type, data);
    return id;
  }

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.headers.get('upgrade') !== 'websocket') {
      return Response.json({
        runners: this.ctx.getWebSockets('runner').length,
        viewers: this.ctx.getWebSockets('viewer').length,
      });
    }
    const way = url.searchParams.get('way');
    const tags = url.pathname === '/link' ? ['runner', `runner:${way}`] : ['viewer', `viewer:${way}`];
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], tags);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  message(text: string, durable: boolean, way: string): { messageId: string } {
    const turn: Turn = { messageId: crypto.randomUUID(), text, durable, way };
    const data = JSON.stringify(turn);
    if (durable) this.#log('user.message', data);
    for (const ws of this.ctx.getWebSockets(`runner:${way}`)) ws.send(data);
    return { messageId: turn.messageId };
  }

  override webSocketMessage(_ws: WebSocket, message: string | ArrayBuffer): void {
    const turn = JSON.parse(typeof message === 'string' ? message : new TextDecoder().decode(message)) as Turn;
    const data = JSON.stringify({ type: 'text.delta', messageId: turn.messageId, text: turn.text });
    const id = turn.durable ? this.#log('text.delta', data) : this.#id();
    for (const frame of toViewerFrames([{ id, type: 'text.delta', data }]))
      for (const viewer of this.ctx.getWebSockets(`viewer:${turn.way}`)) viewer.send(frame);
  }

  override webSocketClose(ws: WebSocket): void {
    ws.close();
  }
}

export default {
  async fetch(request, env) {
    const hub = env.HUB.get(env.HUB.idFromName('session'));
    const { pathname, searchParams } = new URL(request.url);
    if (pathname === '/events')
      return relayedViewer(hub, `http://hub/socket?way=${encodeURIComponent(searchParams.get('way') ?? '')}`);
    if (pathname === '/messages' && request.method === 'POST') {
      const body = (await request.json()) as { text: string; durable?: boolean; way?: string };
      return Response.json(await hub.message(body.text, body.durable === true, body.way ?? ''), { status: 202 });
    }
    return hub.fetch(request);
  },
} satisfies ExportedHandler<FloorEnv>;
