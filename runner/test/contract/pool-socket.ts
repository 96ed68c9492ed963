import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { randomUUID } from 'node:crypto';
import type { Backend } from '@switchyard/protocol';
import { POOL_CONNECT_PATH, type PoolClaim } from '@switchyard/protocol/pool';
import { FAST_ENV, tempDir } from './fixture.ts';
import { startRunner, type RunnerProcess } from './runner-process.ts';

// Stands in for the pool coordinator in runner tests: records a pooled runner's hello and sends
// it the claim; and starts a runner in pooled mode against it.

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

/** `switchyard-runner serve` in pooled mode, dialling `poolUrl`, with the fast settings plus `env`. */
export function startPooledRunner(
  poolUrl: string,
  backend: Backend,
  modelUrl: string,
  env: Record<string, string> = {},
): RunnerProcess {
  return startRunner(['serve'], {
    ...FAST_ENV,
    SWITCHYARD_POOL_URL: poolUrl,
    SWITCHYARD_POOL_TOKEN: 'pool-token-for-this-test',
    SWITCHYARD_RUNNER_ID: `pooled-${randomUUID().slice(0, 8)}`,
    SWITCHYARD_BACKEND: backend,
    SWITCHYARD_MODEL_URL: modelUrl,
    SWITCHYARD_WORKSPACE: tempDir('sy-ws-'),
    SWITCHYARD_STATE_DIR: tempDir('sy-state-'),
    ...env,
  });
}
