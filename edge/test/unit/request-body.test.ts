import { describe, expect, it } from 'vitest';
import { DRAIN_MAX_BYTES, readBody } from '../../src/request-body.ts';

/** A body sent in `chunks` pieces of `chunk` bytes; counts what was pulled and whether it was cancelled. */
function body(chunk: number, chunks: number) {
  const seen = { pulled: 0, cancelled: false };
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (sent === chunks) return controller.close();
        sent += 1;
        seen.pulled += chunk;
        controller.enqueue(new Uint8Array(chunk).fill(120));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

function request(stream: ReadableStream<Uint8Array>, contentLength?: number): Request {
  const headers = contentLength === undefined ? undefined : { 'content-length': String(contentLength) };
  return new Request('http://edge.test/', { method: 'POST', body: stream, headers, duplex: 'half' } as RequestInit);
}

describe('readBody', () => {
  it('hands back a body within the limit, byte for byte', async () => {
    const { stream } = body(1000, 3);
    const r = await readBody(request(stream), 3000);
    expect(r.ok).toBe(true);
    if (r.ok) expect(new Uint8Array(r.value)).toEqual(new Uint8Array(3000).fill(120));
  });

  it('over the limit without Content-Length: refuses, and reads the rest to its end before answering', async () => {
    const { stream, seen } = body(1000, 50);
    const r = await readBody(request(stream), 3000);
    expect(r).toEqual({ ok: false, size: 50_000 });
    expect(seen).toEqual({ pulled: 50_000, cancelled: false });
  });

  it('a declared Content-Length over the limit: refuses at once, and still reads what is sent', async () => {
    const { stream, seen } = body(1000, 50);
    const r = await readBody(request(stream, 50_000), 3000);
    expect(r).toEqual({ ok: false, size: 50_000 });
    expect(seen).toEqual({ pulled: 50_000, cancelled: false });
  });

  it('stops reading and cancels once DRAIN_MAX_BYTES have gone by', async () => {
    const chunk = 1024 * 1024;
    const { stream, seen } = body(chunk, DRAIN_MAX_BYTES / chunk + 8);
    const r = await readBody(request(stream), 3000);
    expect(r.ok).toBe(false);
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThanOrEqual(DRAIN_MAX_BYTES + chunk);
  });
});
