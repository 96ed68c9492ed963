import { MAX_HEARTBEAT_MS, SSE_HEADERS, sseFromViewer } from '../src/sessions/sse.ts';

/**
 * What the edge does for an SSE viewer (edge/src/sessions/routes.ts), for the bench Workers: a
 * viewer WebSocket from the object at `url`, its frames relayed into the SSE response by the edge's
 * own `sseFromViewer`.
 */
export async function relayedViewer(hub: DurableObjectStub, url: string): Promise<Response> {
  const upgraded = await hub.fetch(url, { headers: { upgrade: 'websocket' } });
  const ws = upgraded.webSocket;
  if (ws === null) return new Response('no socket', { status: 502 });
  return new Response(sseFromViewer(ws, { after: null, heartbeatMs: MAX_HEARTBEAT_MS }), { headers: SSE_HEADERS });
}
