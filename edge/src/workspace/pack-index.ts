// Where each packed blob sits (packs.ts): one row per blob and pack, in the session hub's SQLite,
// next to the manifest. A blob uploaded twice has a row in each pack; reads take the newest.
// The sweep drops rows of blobs no file points at once they are old enough, and a pack with no
// row left can go.

export interface PackedBlob {
  sha256: string;
  offset: number;
  size: number;
}

export interface BlobLocation {
  pack: string;
  offset: number;
  size: number;
}

interface Row extends Record<string, SqlStorageValue> {
  sha256: string;
  pack: string;
  offset: number;
  size: number;
}

/** Names per bound JSON list: a Durable Object's SQLite takes strings of at most 2 MB. */
const CHUNK = 10_000;

function chunks(shas: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < shas.length; i += CHUNK) out.push(shas.slice(i, i + CHUNK));
  return out;
}

export class PackIndex {
  readonly #sql: SqlStorage;
  readonly #storage: DurableObjectStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
    this.#sql.exec(
      'CREATE TABLE IF NOT EXISTS workspace_packed_blobs (sha256 TEXT NOT NULL, pack TEXT NOT NULL, offset INTEGER NOT NULL, size INTEGER NOT NULL, stored_at INTEGER NOT NULL, PRIMARY KEY (sha256, pack))',
    );
  }

  /** Records a stored pack's blobs, in one transaction. */
  add(pack: string, blobs: PackedBlob[], now: number): void {
    this.#storage.transactionSync(() => {
      for (const b of blobs)
        this.#sql.exec(
          'INSERT OR REPLACE INTO workspace_packed_blobs (sha256, pack, offset, size, stored_at) VALUES (?, ?, ?, ?, ?)',
          b.sha256,
          pack,
          b.offset,
          b.size,
          now,
        );
    });
  }

  /** Where each of `shas` is packed (the newest copy); a blob not packed is absent from the map. */
  locate(shas: string[]): Map<string, BlobLocation> {
    const found = new Map<string, BlobLocation>();
    for (const chunk of chunks(shas)) {
      const rows = this.#sql
        .exec<Row>(
          'SELECT sha256, pack, offset, size FROM workspace_packed_blobs WHERE sha256 IN (SELECT value FROM json_each(?)) ORDER BY stored_at',
          JSON.stringify(chunk),
        )
        .toArray();
      // Ascending stored_at: a later row (a newer upload) replaces an earlier one.
      for (const r of rows) found.set(r.sha256, { pack: r.pack, offset: r.offset, size: r.size });
    }
    return found;
  }

  /**
   * Forgets packed blobs that `keep` does not name and that were stored before `storedBefore`,
   * and answers every pack some row still names (what a pack sweep must keep).
   */
  sweep(keep: Set<string>, storedBefore: number): Set<string> {
    const old = this.#sql
      .exec<{ sha256: string }>('SELECT DISTINCT sha256 FROM workspace_packed_blobs WHERE stored_at < ?', storedBefore)
      .toArray()
      .map((r) => r.sha256)
      .filter((s) => !keep.has(s));
    for (const chunk of chunks(old))
      this.#sql.exec(
        'DELETE FROM workspace_packed_blobs WHERE stored_at < ? AND sha256 IN (SELECT value FROM json_each(?))',
        storedBefore,
        JSON.stringify(chunk),
      );
    return new Set(
      this.#sql
        .exec<{ pack: string }>('SELECT DISTINCT pack FROM workspace_packed_blobs')
        .toArray()
        .map((r) => r.pack),
    );
  }

  clear(): void {
    this.#sql.exec('DELETE FROM workspace_packed_blobs');
  }
}
