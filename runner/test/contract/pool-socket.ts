import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { POOL_CONNECT_PATH, type PoolClaim } from '@switchyard/protocol/pool';

// Stands in for the pool coordinator in runner tests: records a pooled runner's hello and sends
// it the claim.

/** The coordinator's side of one pooled runner's link: its hello, and a claim to send. */
export async function poolSocket() {
  const server = createServer();
  const wss = new WebSocketServer({ server, path: POOL_CONNECT_PATH });
  let socket: WebSocket | undefined;
  const hello = new Promise<Record<string, unknown>>((resolve) => {
    wss.on('connection', (ws) => {
      socket = ws;
      ws.on('message', (data) => {
        const text = String(data);
        if (text.startsWith('{')) resolve(JSON.parse(text) as Record<string, unknown>);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}${POOL_CONNECT_PATH}`,
    hello,
    claim(frame: PoolClaim) {
      socket?.send(JSON.stringify(frame));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.close(() => resolve());
      }),
  };
}
