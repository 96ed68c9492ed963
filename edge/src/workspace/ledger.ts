import {
  overWorkspaceLimit,
  type WorkspaceBaseline,
  type WorkspaceCommit,
  type WorkspaceCommitResult,
  type WorkspaceEntry,
  type WorkspaceLimits,
} from '@switchyard/protocol';

// The durable workspace's manifest, one row per file in the session hub's SQLite: the hub is the
// one place every change passes through (runner saves and Files API writes alike), so commits are
// serialized without any compare-and-swap on R2. File contents are blobs in R2 (blobs.ts).
// The baseline (the manifest right after the repository clone's commit, and which commit that
// was) is kept beside it: the starting point the workspace diff compares to (diff.ts).

/**
 * Why a commit was refused: over a limit (413), a path that is both a file and a folder (409), or
 * a second baseline (409 `baseline_exists`).
 */
export type CommitRefusal = { status: 409 | 413; field: string; message: string; baselineExists?: true };

/** A file as the baseline had it: what the diff needs, no times. */
export type BaselineEntry = Pick<WorkspaceEntry, 'path' | 'sha256' | 'size' | 'executable'>;

interface Row extends Record<string, SqlStorageValue> {
  path: string;
  sha256: string;
  size: number;
  executable: number;
  modified_at: number;
}

function toEntry(r: Row): WorkspaceEntry {
  return { path: r.path, sha256: r.sha256, size: r.size, executable: r.executable === 1, modifiedAt: r.modified_at };
}

export class WorkspaceLedger {
  readonly #sql: SqlStorage;
  readonly #storage: DurableObjectStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS workspace_files (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, executable INTEGER NOT NULL, modified_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS workspace_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS workspace_baseline (one INTEGER PRIMARY KEY CHECK (one = 1), url TEXT NOT NULL, ref TEXT, commit_id TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS workspace_baseline_files (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, executable INTEGER NOT NULL);
    `);
  }

  get generation(): number {
    return this.#sql.exec<{ v: number }>("SELECT v FROM workspace_meta WHERE k = 'generation'").toArray()[0]?.v ?? 0;
  }

  files(): WorkspaceEntry[] {
    return this.#sql
      .exec<Row>('SELECT path, sha256, size, executable, modified_at FROM workspace_files ORDER BY path')
      .toArray()
      .map(toEntry);
  }

  entry(path: string): WorkspaceEntry | undefined {
    const row = this.#sql
      .exec<Row>('SELECT path, sha256, size, executable, modified_at FROM workspace_files WHERE path = ?', path)
      .toArray()[0];
    return row === undefined ? undefined : toEntry(row);
  }

  totals(): { files: number; bytes: number } {
    const row = this.#sql
      .exec<{ n: number; b: number | null }>('SELECT COUNT(*) AS n, SUM(size) AS b FROM workspace_files')
      .toArray()[0];
    return { files: row?.n ?? 0, bytes: row?.b ?? 0 };
  }

  /** Which repository commit the workspace started from, or null (no clone committed yet, or none). */
  baseline(): WorkspaceBaseline | null {
    const row = this.#sql
      .exec<{ url: string; ref: string | null; commit_id: string }>(
        'SELECT url, ref, commit_id FROM workspace_baseline WHERE one = 1',
      )
      .toArray()[0];
    if (row === undefined) return null;
    return { url: row.url, ...(row.ref !== null && { ref: row.ref }), commit: row.commit_id };
  }

  /** The files as of the baseline commit; empty when there is no baseline. */
  baselineFiles(): BaselineEntry[] {
    return this.#sql
      .exec<{ path: string; sha256: string; size: number; executable: number }>(
        'SELECT path, sha256, size, executable FROM workspace_baseline_files ORDER BY path',
      )
      .toArray()
      .map((r) => ({ path: r.path, sha256: r.sha256, size: r.size, executable: r.executable === 1 }));
  }

  /** Every blob some file (now or in the baseline) points at: what a blob sweep must keep. */
  liveBlobs(): Set<string> {
    return new Set(
      this.#sql
        .exec<{ sha256: string }>(
          'SELECT sha256 FROM workspace_files UNION SELECT sha256 FROM workspace_baseline_files',
        )
        .toArray()
        .map((r) => r.sha256),
    );
  }

  /**
   * Applies a commit in one transaction, or refuses it whole when the result would be over a
   * limit. Deletes of paths that are not there are ignored (a file deleted twice is gone).
   */
  apply(
    commit: WorkspaceCommit,
    limits: WorkspaceLimits,
    /** Decide only: the transaction is rolled back whatever the verdict. */
    o: { dryRun?: boolean } = {},
  ): { ok: true; value: WorkspaceCommitResult } | { ok: false; error: CommitRefusal } {
    if (commit.baseline !== undefined && this.baseline() !== null) {
      return {
        ok: false,
        error: {
          status: 409,
          field: 'baseline',
          message: 'baseline: this workspace already has a baseline',
          baselineExists: true,
        },
      };
    }
    for (const u of commit.upserts) {
      if (u.size > limits.maxFileBytes) {
        return {
          ok: false,
          error: {
            status: 413,
            field: 'maxFileBytes',
            message: `maxFileBytes: ${u.path} is ${u.size} bytes, over the ${limits.maxFileBytes} byte limit`,
          },
        };
      }
    }
    let refusal: CommitRefusal | null = null;
    let decided: WorkspaceCommitResult | null = null;
    const storage = this.#sql;
    const run = () => {
      for (const path of commit.deletes) storage.exec('DELETE FROM workspace_files WHERE path = ?', path);
      for (const u of commit.upserts) {
        const clash = this.#clash(u.path);
        if (clash !== null) {
          refusal = { status: 409, field: 'path', message: clash };
          throw new Error('path clash');
        }
        storage.exec(
          'INSERT INTO workspace_files (path, sha256, size, executable, modified_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, executable = excluded.executable, modified_at = excluded.modified_at',
          u.path,
          u.sha256,
          u.size,
          u.executable ? 1 : 0,
          u.modifiedAt,
        );
      }
      const totals = this.totals();
      const over = overWorkspaceLimit(totals, limits);
      if (over !== null) {
        refusal = {
          status: 413,
          field: over.limit,
          message: `${over.limit}: the workspace would hold ${over.limit === 'maxWorkspaceFiles' ? `${totals.files} files` : `${totals.bytes} bytes`}, over the limit of ${over.value}`,
        };
        // Thrown to roll the transaction back; caught right below.
        throw new Error('over limit');
      }
      if (o.dryRun === true) {
        decided = { generation: this.generation, ...totals };
        throw new Error('dry run');
      }
      storage.exec("INSERT INTO workspace_meta (k, v) VALUES ('generation', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1");
      if (commit.baseline !== undefined) this.#recordBaseline(commit.baseline);
    };
    try {
      this.#storage.transactionSync(run);
    } catch (err) {
      if (refusal !== null) return { ok: false, error: refusal };
      if (decided !== null) return { ok: true, value: decided };
      throw err;
    }
    return { ok: true, value: { generation: this.generation, ...this.totals() } };
  }

  /** Why `path` cannot be a file here (a parent is a file, or it is a folder), or null. */
  #clash(path: string): string | null {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (this.#sql.exec('SELECT 1 FROM workspace_files WHERE path = ?', parent).toArray().length > 0)
        return `path: ${parent} is a file, so ${path} cannot be created under it`;
    }
    // Paths under `path/` sort between `path/` and `path0` ('0' follows '/').
    const under = this.#sql
      .exec('SELECT 1 FROM workspace_files WHERE path > ? AND path < ? LIMIT 1', `${path}/`, `${path}0`)
      .toArray();
    return under.length > 0 ? `path: ${path} is a folder` : null;
  }

  /** The manifest as it stands (inside the commit's transaction) becomes the baseline. */
  #recordBaseline(b: WorkspaceBaseline): void {
    this.#sql.exec(
      'INSERT INTO workspace_baseline (one, url, ref, commit_id) VALUES (1, ?, ?, ?)',
      b.url,
      b.ref ?? null,
      b.commit,
    );
    this.#sql.exec(
      'INSERT INTO workspace_baseline_files (path, sha256, size, executable) SELECT path, sha256, size, executable FROM workspace_files',
    );
  }

  clear(): void {
    this.#sql.exec('DELETE FROM workspace_files');
    this.#sql.exec('DELETE FROM workspace_meta');
    this.#sql.exec('DELETE FROM workspace_baseline');
    this.#sql.exec('DELETE FROM workspace_baseline_files');
  }
}
