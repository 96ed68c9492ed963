import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamAgent, type UpstreamAgent } from '../src/sandbox/upstream-agent.ts';

// The credential proxy's agent (docs/DESIGN.md "Warm runner pool"): a connection opened ahead is
// the one the next call takes, and one nobody took is closed after its time.

let server: Server | undefined;
let agent: UpstreamAgent | undefined;
afterEach(async () => {
  agent?.destroy();
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = agent = undefined;
});

/** An upstream that answers with the id of the connection each request came on. */
async function upstream(): Promise<{ url: URL; connections: Socket[] }> {
  const connections: Socket[] = [];
  server = createServer((req, res) => res.end(String(connections.indexOf(req.socket))));
  server.on('connection', (s: Socket) => connections.push(s));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), connections };
}

function get(url: URL, a: UpstreamAgent): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { agent: a.agent }, (res: IncomingMessage) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
}

describe('upstream agent', () => {
  it('opens the connection before the call, and the call takes it; a second preconnect opens nothing', async () => {
    const up = await upstream();
    agent = upstreamAgent(up.url);
    agent.preconnect();
    await once(server as Server, 'connection');
    agent.preconnect();
    expect(await get(up.url, agent)).toBe('0');
    // Kept alive: the next call reuses it, and a preconnect with a free connection opens none.
    agent.preconnect();
    expect(await get(up.url, agent)).toBe('0');
    expect(up.connections).toHaveLength(1);
  });

  it('closes a connection nobody took in time; the next call opens its own', async () => {
    const up = await upstream();
    agent = upstreamAgent(up.url, 50);
    agent.preconnect();
    await once(server as Server, 'connection');
    const [spare] = up.connections;
    await once(spare as Socket, 'close');
    expect(await get(up.url, agent)).toBe('1');
    expect(up.connections).toHaveLength(2);
  });
});
