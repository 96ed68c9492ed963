// Reads a request body into memory, stopping as soon as it passes `max` bytes, so a client that
// lies about (or omits) Content-Length cannot make the Worker buffer more than the limit.

export async function readBody(
  req: Request,
  max: number,
): Promise<{ ok: true; value: ArrayBuffer } | { ok: false; size: number }> {
  const declared = Number(req.headers.get('Content-Length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > max) return { ok: false, size: declared };
  if (req.body === null) return { ok: true, value: new ArrayBuffer(0) };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return { ok: false, size };
    }
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
