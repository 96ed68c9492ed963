import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

// A server in front of the offline model that shows what reaches it: when each call arrived (its
// headers read), and every connection it accepts (`server.on('connection')`). With
// `closeConnections` it closes each connection after its answer, as a provider may close an idle
// one, so every call after the first needs a new connection. Answers are passed on whole.

export interface ModelForwarder {
  server: Server;
  url: string;
  close(): void;
}

export async function startModelForwarder(
  target: string,
  o: { closeConnections?: boolean; onCall?: (arrivedAt: number, body: string) => void } = {},
): Promise<ModelForwarder> {
  const server = createServer(async (req, res) => {
    const arrivedAt = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    o.onCall?.(arrivedAt, body);
    const answer = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      // claude checks the endpoint with a HEAD first.
      ...(req.method !== 'GET' && req.method !== 'HEAD' && { body }),
    });
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
      ...(o.closeConnections && { connection: 'close' }),
    });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, close: () => server.close() };
}
