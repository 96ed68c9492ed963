// One HTTP request over node:http/https with the whole answer buffered: the transport of the
// workspace client and of the task credentials. Not fetch: the first fetch loads Node's bundled
// undici, ~5 MiB more in every runner for a client that sends a few small requests per turn
// (docs/DESIGN.md "Runner memory").
import type { IncomingMessage, RequestOptions } from 'node:http';
import { requestFor } from './http-client.ts';

export interface HttpAnswer {
  status: number;
  body: Buffer;
}

export function httpRequest(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: Uint8Array | string,
  /** No answer by then: the request fails (absent: it waits as long as the socket lives). */
  timeoutMs?: number,
): Promise<HttpAnswer> {
  const u = new URL(url);
  const options: RequestOptions = {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
  };
  return new Promise((resolve, reject) => {
    const onAnswer = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    };
    const req = requestFor(u)(u, options, onAnswer);
    req.on('error', reject);
    if (timeoutMs !== undefined)
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${u.host} within ${timeoutMs} ms`)));
    req.end(body);
  });
}
