// Request bodies with a size limit. A body over the limit is never kept, but what the client is
// still sending is read and dropped (up to DRAIN_MAX_BYTES) before the 413 goes out: workerd
// resets a connection whose request body was left unread once the response is sent, and the
// client then sees a network error (a 500 through wrangler dev) instead of the 413 that names the
// limit. Past DRAIN_MAX_BYTES the body is cancelled and a reset is the answer.
import type { Context, MiddlewareHandler } from 'hono';

/** The most of an over-limit body that is read (and dropped) so its 413 reaches the client. */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

export type BodyRead = { ok: true; value: ArrayBuffer } | { ok: false; size: number };

/**
 * Reads a request body into memory, keeping nothing past `max` bytes, so a client that lies about
 * (or omits) Content-Length cannot make the Worker buffer more than the limit.
 */
export async function readBody(req: Request, max: number): Promise<BodyRead> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > max) {
    if (req.body !== null) await drain(req.body.getReader(), 0);
    return { ok: false, size: declared };
  }
  if (req.body === null) return { ok: true, value: new ArrayBuffer(0) };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) return { ok: false, size: await drain(reader, size) };
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return { ok: true, value: out.buffer };
}

/** The body's length as its Content-Length declares it; none when absent or sent chunked. */
function declaredLength(req: Request): number | undefined {
  if (req.headers.has('Transfer-Encoding')) return undefined;
  const declared = Number(req.headers.get('Content-Length') ?? Number.NaN);
  return Number.isFinite(declared) ? declared : undefined;
}

/** Reads and drops the rest of a body; cancels it once `DRAIN_MAX_BYTES` have gone by. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, seen: number): Promise<number> {
  let size = seen;
  while (size <= DRAIN_MAX_BYTES) {
    const { done, value } = await reader.read();
    if (done) return size;
    size += value.byteLength;
  }
  await reader.cancel();
  return size;
}

/**
 * Middleware: over `maxSize` the route never runs and `onTooLarge` answers (a 413). A body whose
 * Content-Length is within the limit goes on as it came (the runtime holds it to that length);
 * one without is read up to the limit and handed on in memory. Hono's own bodyLimit answers at
 * once and leaves the body unread, which is what makes workerd reset the connection.
 */
export function limitBody(maxSize: number, onTooLarge: (c: Context) => Response): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.raw.body === null) return next();
    const declared = declaredLength(c.req.raw);
    if (declared !== undefined && declared <= maxSize) return next();
    const body = await readBody(c.req.raw, maxSize);
    if (!body.ok) return onTooLarge(c);
    c.req.raw = new Request(c.req.raw, { body: body.value });
    return next();
  };
}
