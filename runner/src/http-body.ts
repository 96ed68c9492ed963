import type { IncomingMessage } from 'node:http';

/**
 * A request's body, at most `max` bytes of it: once it grows past `max` the rest is read and
 * dropped (`overflowed`), so the request still ends and can be answered.
 */
export function readBody(req: IncomingMessage, max: number): Promise<{ body: Buffer; overflowed: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) chunks.push(chunk);
    });
    req.on('end', () => resolve({ body: Buffer.concat(chunks), overflowed: size > max }));
    req.on('error', reject);
  });
}
