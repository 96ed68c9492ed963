import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { httpRequest } from '../src/http-request.ts';

// The workspace client's transport against real loopback servers: plain HTTP answered in full,
// and an https URL spoken to in TLS (the module loads https only for it).

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

describe('workspace httpRequest', () => {
  test('http: the method, headers and body arrive; the status and the whole body come back', async () => {
    let seen = '';
    const port = await listen(
      createHttpServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => {
          body += c.toString();
        });
        req.on('end', () => {
          seen = `${req.method} ${req.url} ${req.headers['x-test']} ${req.headers['content-length']} ${body}`;
          res.writeHead(201).end('stored');
        });
      }),
    );
    const answer = await httpRequest('PUT', `http://127.0.0.1:${port}/w/a.txt`, { 'x-test': 'yes' }, 'héllo');
    expect(seen).toBe('PUT /w/a.txt yes 6 héllo');
    expect(answer.status).toBe(201);
    expect(answer.body.toString()).toBe('stored');
  });

  test('https: the first bytes on the wire are a TLS handshake record, and a failed handshake rejects', async () => {
    const firstBytes: number[] = [];
    const port = await listen(
      createTcpServer((socket) => {
        socket.once('data', (d: Buffer) => {
          firstBytes.push(d[0] as number, d[1] as number);
          socket.destroy();
        });
      }),
    );
    await expect(httpRequest('GET', `https://127.0.0.1:${port}/w`, {})).rejects.toThrow();
    expect(firstBytes).toEqual([0x16, 0x03]);
  });
});
