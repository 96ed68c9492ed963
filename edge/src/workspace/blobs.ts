import { toHex } from '@switchyard/protocol';

// Workspace file contents in R2 (the TRANSCRIPTS bucket), one object per distinct content under
// the session's prefix, named by its sha256: a save uploads only contents the session does not
// hold yet. Per session, not global, so one user's upload never tells another what exists, and a
// deleted session takes its blobs with it.

export function blobPrefix(sessionId: string): string {
  return `sessions/${sessionId}/workspace/blobs/`;
}

export function blobKey(sessionId: string, sha256: string): string {
  return `${blobPrefix(sessionId)}${sha256}`;
}

export async function sha256Hex(data: ArrayBuffer | Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
}

/** The size of a blob stored as its own object, or null when there is none. */
export async function looseBlobSize(bucket: R2Bucket, sessionId: string, sha256: string): Promise<number | null> {
  return (await bucket.head(blobKey(sessionId, sha256)))?.size ?? null;
}

/**
 * Stores `data` under its own sha256 (computed here, never taken from the caller) and returns it;
 * when `expected` is given and differs, stores nothing.
 */
export async function putBlob(
  bucket: R2Bucket,
  sessionId: string,
  data: ArrayBuffer,
  expected?: string,
): Promise<string> {
  const sha = await sha256Hex(data);
  if (expected !== undefined && sha !== expected) return sha;
  // Written even when present: the fresh upload time keeps a sweep from deleting a blob that a
  // commit is about to reference again (see sweepBlobs).
  await bucket.put(blobKey(sessionId, sha), data);
  return sha;
}

/**
 * A blob stored as its own object. Small ones are mostly packed (packs.ts): read workspace
 * content with packs.ts (`openWorkspaceBlob`, `readBlobs`), which looks in both places.
 */
export function getLooseBlob(bucket: R2Bucket, sessionId: string, sha256: string): Promise<R2ObjectBody | null> {
  return bucket.get(blobKey(sessionId, sha256));
}

/**
 * Deletes the session's blobs that `keep` does not name (all of them when `keep` is empty), or
 * only those uploaded before `uploadedBefore`: a blob uploaded since may belong to a commit that
 * has not reached the hub yet.
 */
export function sweepBlobs(
  bucket: R2Bucket,
  sessionId: string,
  keep: Set<string>,
  uploadedBefore = Number.POSITIVE_INFINITY,
): Promise<number> {
  return sweepObjects(bucket, blobPrefix(sessionId), keep, uploadedBefore);
}

/** Deletes the objects under `prefix` uploaded before `uploadedBefore` whose name after it `keep` lacks. */
export async function sweepObjects(
  bucket: R2Bucket,
  prefix: string,
  keep: Set<string>,
  uploadedBefore: number,
): Promise<number> {
  let cursor: string | undefined;
  let deleted = 0;
  do {
    const page = await bucket.list({ prefix, ...(cursor !== undefined && { cursor }) });
    const gone = page.objects
      .filter((o) => o.uploaded.getTime() < uploadedBefore && !keep.has(o.key.slice(prefix.length)))
      .map((o) => o.key);
    if (gone.length > 0) await bucket.delete(gone);
    deleted += gone.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return deleted;
}
