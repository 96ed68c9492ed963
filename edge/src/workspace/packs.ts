import { eachLimited } from '@switchyard/protocol';
import { hubFor } from '../sessions/access.ts';
import { getLooseBlob, sha256Hex, sweepObjects } from './blobs.ts';
import type { BlobLocation, PackedBlob } from './pack-index.ts';

// Small workspace blobs stored together: a runner's upload batch becomes one R2 object (a "pack",
// the blobs back to back) under the session's prefix, `sessions/<id>/workspace/packs/<uuid>`, and
// the hub's pack index (pack-index.ts) says where each blob sits. R2 pays per object, in money
// and, in local workerd, in milliseconds: 5,000 small files are then ten objects, not 5,000.
// Blobs too big for a batch stay one object each (blobs.ts); reads look in the index first.

/** R2 ranged reads and loose-object reads at once, per request. */
const READ_CONCURRENCY = 16;
/** Bytes between wanted blobs a shared read may carry beyond twice what it answers. */
const SPAN_SLACK_BYTES = 16 * 1024;

function packPrefix(sessionId: string): string {
  return `sessions/${sessionId}/workspace/packs/`;
}

function packKey(sessionId: string, pack: string): string {
  return `${packPrefix(sessionId)}${pack}`;
}

/**
 * Stores `parts` as one new pack (named at random: a pack is never rewritten, so a sweep that
 * decides to delete one cannot race an upload into it) and answers each part's sha256, computed
 * here, and place.
 */
export async function putPack(
  bucket: R2Bucket,
  sessionId: string,
  parts: Uint8Array[],
): Promise<{ pack: string; blobs: PackedBlob[] }> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const body = new Uint8Array(total);
  const blobs: PackedBlob[] = [];
  let offset = 0;
  for (const p of parts) {
    body.set(p, offset);
    blobs.push({ sha256: await sha256Hex(p), offset, size: p.length });
    offset += p.length;
  }
  const pack = crypto.randomUUID();
  await bucket.put(packKey(sessionId, pack), body);
  return { pack, blobs };
}

/**
 * The contents of `shas`, in order, null for one stored nowhere: a pack's wanted blobs with one
 * ranged read when they lie close, else one ranged read each; the rest as their own objects.
 * 'too_large' when together they are over `maxBytes` (a loose object's size is known before its
 * body is read).
 */
export async function readBlobs(
  bucket: R2Bucket,
  sessionId: string,
  shas: string[],
  located: Map<string, BlobLocation>,
  maxBytes: number,
): Promise<Array<Uint8Array | null> | 'too_large'> {
  let bytes = 0;
  for (const sha of new Set(shas)) bytes += located.get(sha)?.size ?? 0;
  if (bytes > maxBytes) return 'too_large';
  const found = new Map<string, Uint8Array>();
  const byPack = new Map<string, Array<{ sha: string; at: BlobLocation }>>();
  const loose: string[] = [];
  for (const sha of new Set(shas)) {
    const at = located.get(sha);
    if (at === undefined) loose.push(sha);
    else byPack.set(at.pack, [...(byPack.get(at.pack) ?? []), { sha, at }]);
  }
  // One read per span: a pack's wanted blobs together when they lie close (a restore reads
  // whole batches back), else each on its own, so a read never holds much more than it answers.
  const spans: Array<{ pack: string; wanted: Array<{ sha: string; at: BlobLocation }> }> = [];
  for (const [pack, wanted] of byPack) {
    const start = Math.min(...wanted.map((w) => w.at.offset));
    const end = Math.max(...wanted.map((w) => w.at.offset + w.at.size));
    const size = wanted.reduce((n, w) => n + w.at.size, 0);
    if (end - start <= 2 * size + SPAN_SLACK_BYTES) spans.push({ pack, wanted });
    else for (const w of wanted) spans.push({ pack, wanted: [w] });
  }
  await eachLimited(spans, READ_CONCURRENCY, async ({ pack, wanted }) => {
    const start = Math.min(...wanted.map((w) => w.at.offset));
    const end = Math.max(...wanted.map((w) => w.at.offset + w.at.size));
    if (end === start) {
      // Only empty files: nothing to read (R2 refuses an empty range).
      for (const w of wanted) found.set(w.sha, new Uint8Array(0));
      return;
    }
    const obj = await bucket.get(packKey(sessionId, pack), { range: { offset: start, length: end - start } });
    if (obj === null) {
      for (const w of wanted) loose.push(w.sha);
      return;
    }
    const span = new Uint8Array(await obj.arrayBuffer());
    for (const w of wanted) found.set(w.sha, span.subarray(w.at.offset - start, w.at.offset - start + w.at.size));
  });
  let over = false;
  await eachLimited(loose, READ_CONCURRENCY, async (sha) => {
    const obj = await getLooseBlob(bucket, sessionId, sha);
    if (obj === null) return;
    bytes += obj.size;
    if (over || bytes > maxBytes) {
      over = true;
      await obj.body.cancel();
      return;
    }
    found.set(sha, new Uint8Array(await obj.arrayBuffer()));
  });
  if (over) return 'too_large';
  return shas.map((s) => found.get(s) ?? null);
}

/** A blob's content, as R2 gives it: a stream, or read whole. */
export interface BlobBody {
  body: ReadableStream;
  size: number;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** One blob: from its pack when `at` is given (and the pack is there), else its own object. */
export async function openBlob(
  bucket: R2Bucket,
  sessionId: string,
  sha: string,
  at: BlobLocation | undefined,
): Promise<BlobBody | null> {
  if (at !== undefined) {
    const packed = await openPacked(bucket, sessionId, at);
    if (packed !== null) return packed;
  }
  const obj = await getLooseBlob(bucket, sessionId, sha);
  return obj === null ? null : { body: obj.body, size: obj.size, arrayBuffer: () => obj.arrayBuffer() };
}

/** One blob's span of its pack; null when the pack is gone. */
async function openPacked(bucket: R2Bucket, sessionId: string, at: BlobLocation): Promise<BlobBody | null> {
  if (at.size === 0) {
    const empty = new Blob([]);
    return { body: empty.stream(), size: 0, arrayBuffer: () => empty.arrayBuffer() };
  }
  const obj = await bucket.get(packKey(sessionId, at.pack), { range: { offset: at.offset, length: at.size } });
  return obj === null ? null : { body: obj.body, size: at.size, arrayBuffer: () => obj.arrayBuffer() };
}

/** One blob of the session's workspace as a stream, wherever it is stored; null when nowhere. */
export async function openWorkspaceBlob(env: Env, sessionId: string, sha: string): Promise<BlobBody | null> {
  const at = (await hubFor(env, sessionId).workspaceBlobLocations([sha])).get(sha);
  return openBlob(env.TRANSCRIPTS, sessionId, sha, at);
}

/**
 * One blob from its pack, for a caller that already found no object of its own: the loose
 * object is not read a second time. Null when the hub knows no pack for it or the pack is gone.
 */
export async function openPackedWorkspaceBlob(env: Env, sessionId: string, sha: string): Promise<BlobBody | null> {
  const at = (await hubFor(env, sessionId).workspaceBlobLocations([sha])).get(sha);
  return at === undefined ? null : openPacked(env.TRANSCRIPTS, sessionId, at);
}

/**
 * Deletes the session's packs `keep` does not name (all when it is empty) uploaded before
 * `uploadedBefore`: a younger pack may be stored but not yet in the index.
 */
export function sweepPacks(
  bucket: R2Bucket,
  sessionId: string,
  keep: Set<string>,
  uploadedBefore = Number.POSITIVE_INFINITY,
): Promise<number> {
  return sweepObjects(bucket, packPrefix(sessionId), keep, uploadedBefore);
}
