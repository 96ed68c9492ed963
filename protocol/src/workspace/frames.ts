// Many small workspace blobs in one HTTP body: each is a 4-byte big-endian length and its bytes.
// A save of 5,000 small files is then a few requests instead of 5,000. Pure; loads in workerd.

/** Files up to this size travel in batches; bigger ones one request each. */
export const BATCH_BLOB_MAX_BYTES = 256 * 1024;
/** Largest batch body, and most blobs in one batch. */
export const BATCH_MAX_BYTES = 8 * 1024 * 1024;
export const BATCH_MAX_BLOBS = 512;

export function encodeFrames(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + 4 + p.length, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const p of parts) {
    view.setUint32(at, p.length);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  return out;
}

/** The parts, or null when the body is not a whole number of frames. */
export function decodeFrames(body: Uint8Array): Uint8Array[] | null {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const parts: Uint8Array[] = [];
  let at = 0;
  while (at < body.length) {
    if (at + 4 > body.length) return null;
    const len = view.getUint32(at);
    if (at + 4 + len > body.length) return null;
    parts.push(body.subarray(at + 4, at + 4 + len));
    at += 4 + len;
  }
  return parts;
}
