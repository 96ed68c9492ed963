import {
  BATCH_BLOB_MAX_BYTES,
  BATCH_MAX_BLOBS,
  BATCH_MAX_BYTES,
  eachLimited,
  type ErrorInfo,
  type WorkspaceBaseline,
  type WorkspaceCommit,
  type WorkspaceCommitResult,
  type WorkspaceEntry,
  type WorkspaceLimits,
  type WorkspaceManifest,
} from '@switchyard/protocol';
import { messageOf, runnerError, type Result } from '../errors.ts';
import type { Logger } from '../log.ts';
import { readInside, scanWorkspace, sha256, statInside, type DiskFile } from './scan.ts';
import { removeInside, writeInside } from './write.ts';

// The runner's half of the durable workspace (docs/DESIGN.md "Workspaces"). `known` is what this
// runner knows the durable copy holds, with what each file looked like on disk when it last
// matched, so a save hashes only files whose size, mtime or inode moved and uploads only contents
// the durable copy lacks: one changed file in a large workspace moves about one file.

/** Where the durable copy lives (the edge over HTTP; a fake in unit tests). */
export interface WorkspaceStore {
  manifest(): Promise<WorkspaceManifest>;
  getBlob(sha256: string): Promise<Uint8Array>;
  putBlob(sha256: string, data: Uint8Array): Promise<void>;
  /** Several small blobs at once (BATCH_*): their sha256 names in order. */
  putBlobs(parts: Uint8Array[]): Promise<string[]>;
  getBlobs(sha256: string[]): Promise<Uint8Array[]>;
  commit(commit: WorkspaceCommit): Promise<WorkspaceCommitResult>;
}

export interface SaveStats {
  committed: boolean;
  upserts: number;
  deletes: number;
  uploadedFiles: number;
  uploadedBytes: number;
  hashedFiles: number;
}

export interface PullStats {
  written: number;
  writtenBytes: number;
  removed: number;
}

interface Known {
  entry: WorkspaceEntry;
  /** The file on disk as of when it last matched `entry`. */
  disk: DiskFile | undefined;
}

/** Blobs moved at once, each way. */
const TRANSFER_CONCURRENCY = 8;
/** Files of one fetched batch written at once. */
const WRITE_CONCURRENCY = 8;

function sameDisk(a: DiskFile | undefined, b: DiskFile): boolean {
  return (
    a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.executable === b.executable
  );
}

/** Groups entries into batches within BATCH_MAX_BLOBS and BATCH_MAX_BYTES. */
function batches(entries: WorkspaceEntry[]): WorkspaceEntry[][] {
  const out: WorkspaceEntry[][] = [];
  let cur: WorkspaceEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (cur.length > 0 && (cur.length >= BATCH_MAX_BLOBS || bytes + e.size > BATCH_MAX_BYTES)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += e.size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Small uploads collected and sent as batches; the answer's names are checked against ours. */
class UploadBatch {
  readonly #store: WorkspaceStore;
  #shas: string[] = [];
  #parts: Uint8Array[] = [];
  #bytes = 0;
  constructor(store: WorkspaceStore) {
    this.#store = store;
  }
  async add(sha: string, data: Uint8Array): Promise<void> {
    if (this.#parts.length >= BATCH_MAX_BLOBS || this.#bytes + data.length > BATCH_MAX_BYTES) await this.flush();
    this.#shas.push(sha);
    this.#parts.push(data);
    this.#bytes += data.length;
  }
  async flush(): Promise<void> {
    if (this.#parts.length === 0) return;
    const shas = this.#shas;
    const parts = this.#parts;
    this.#shas = [];
    this.#parts = [];
    this.#bytes = 0;
    const stored = await this.#store.putBlobs(parts);
    if (stored.length !== shas.length || stored.some((s, i) => s !== shas[i]))
      throw new Error('the durable copy stored a batch under other names than its contents hash to');
  }
}

export class WorkspaceSync {
  readonly #root: string;
  readonly #store: WorkspaceStore;
  readonly #log: Logger;
  readonly #onError: (error: ErrorInfo) => void;
  readonly #known = new Map<string, Known>();
  #generation = 0;
  #limits: WorkspaceLimits | undefined;
  #chain: Promise<unknown> = Promise.resolve();

  readonly #modeForCli: ((mode: number) => number) | undefined;

  constructor(opts: {
    root: string;
    store: WorkspaceStore;
    log: Logger;
    onError: (error: ErrorInfo) => void;
    /** The mode restored files and folders get (sandbox.ts `modeForCli`). */
    modeForCli?: (mode: number) => number;
  }) {
    this.#root = opts.root;
    this.#modeForCli = opts.modeForCli;
    this.#store = opts.store;
    this.#log = opts.log;
    this.#onError = opts.onError;
  }

  /** One operation at a time, in call order; a failure is reported and does not stop the next. */
  #serialized<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    const run = this.#chain.then(fn).catch((err: unknown) => {
      const code = `workspace_${what}_failed`;
      this.#log.error(`workspace ${what} failed`, { message: messageOf(err) });
      this.#onError(runnerError(code, `workspace ${what} failed: ${messageOf(err)}`, true));
      return undefined;
    });
    this.#chain = run;
    return run;
  }

  /** Brings the durable copy into the workspace (before the CLI starts, and on workspace_sync). */
  pull(): Promise<PullStats | undefined> {
    return this.#serialized('restore', () => this.#pull());
  }

  /**
   * Saves what changed since the last save or pull. `announce`: commit even when nothing
   * changed, so the end of every turn is marked by a `workspace.saved`.
   */
  save(opts: { announce: boolean }): Promise<SaveStats | undefined> {
    return this.#serialized('save', () => this.#save(opts.announce));
  }

  /**
   * The repository clone's commit: everything in the workspace, marked as the baseline. Its
   * failure is returned, not reported: the caller ends the start with it.
   */
  saveBaseline(baseline: WorkspaceBaseline): Promise<Result<SaveStats>> {
    const run = this.#chain.then(() => this.#save(true, baseline));
    this.#chain = run.catch(() => undefined);
    return run.then(
      (stats): Result<SaveStats> => ({ ok: true, value: stats }),
      (err: unknown): Result<SaveStats> => ({
        ok: false,
        error: runnerError('workspace_save_failed', `workspace save failed: ${messageOf(err)}`, true),
      }),
    );
  }

  async #pull(): Promise<PullStats> {
    const m = await this.#store.manifest();
    this.#limits = m.limits;
    const stats: PullStats = { written: 0, writtenBytes: 0, removed: 0 };
    const wanted = new Set<string>();
    const failures: string[] = [];
    for (const entry of m.files) wanted.add(entry.path);
    const todo = m.files.filter((entry) => {
      const k = this.#known.get(entry.path);
      return k === undefined || k.entry.sha256 !== entry.sha256 || k.entry.executable !== entry.executable;
    });
    const place = async (entry: WorkspaceEntry, data: Uint8Array) => {
      try {
        if (data.length !== entry.size || sha256(data) !== entry.sha256)
          throw new Error(`${entry.path}: content does not match its sha256`);
        this.#known.set(entry.path, {
          entry,
          disk: await writeInside(this.#root, entry.path, data, {
            ...entry,
            ...(this.#modeForCli && { modeForCli: this.#modeForCli }),
          }),
        });
        stats.written += 1;
        stats.writtenBytes += data.length;
      } catch (err) {
        failures.push(messageOf(err));
      }
    };
    // Small files come in batches (one request each), big ones one by one.
    const jobs: WorkspaceEntry[][] = batches(todo.filter((e) => e.size <= BATCH_BLOB_MAX_BYTES));
    for (const e of todo) if (e.size > BATCH_BLOB_MAX_BYTES) jobs.push([e]);
    await eachLimited(jobs, TRANSFER_CONCURRENCY, async (job) => {
      let datas: Uint8Array[];
      try {
        datas =
          job.length === 1 && (job[0] as WorkspaceEntry).size > BATCH_BLOB_MAX_BYTES
            ? [await this.#store.getBlob((job[0] as WorkspaceEntry).sha256)]
            : await this.#store.getBlobs(job.map((e) => e.sha256));
      } catch (err) {
        for (const e of job) failures.push(`${e.path}: ${messageOf(err)}`);
        return;
      }
      await eachLimited([...job.entries()], WRITE_CONCURRENCY, ([i, e]) => place(e, datas[i] as Uint8Array));
    });
    for (const [path, k] of this.#known) {
      if (wanted.has(path)) continue;
      // Deleted in the durable copy (a person, through the Files API). Removed here unless the
      // agent changed it since: then its version stays and the next save brings it back.
      const now = await statInside(this.#root, path);
      if (now === undefined || sameDisk(k.disk, now)) {
        await removeInside(this.#root, path);
        stats.removed += 1;
      }
      this.#known.delete(path);
    }
    this.#generation = m.generation;
    this.#log.info('workspace pulled', { generation: m.generation, ...stats, failed: failures.length });
    if (failures.length > 0) throw new Error(`${failures.length} file(s) not restored, e.g. ${failures[0]}`);
    return stats;
  }

  async #save(announce: boolean, baseline?: WorkspaceBaseline): Promise<SaveStats> {
    const limits = this.#limits ?? (await this.#store.manifest()).limits;
    this.#limits = limits;
    const scan = await scanWorkspace(this.#root);
    const stats: SaveStats = {
      committed: false,
      upserts: 0,
      deletes: 0,
      uploadedFiles: 0,
      uploadedBytes: 0,
      hashedFiles: 0,
    };
    const stored = new Set([...this.#known.values()].map((k) => k.entry.sha256));
    const upserts: Array<{ entry: WorkspaceEntry; disk: DiskFile }> = [];
    const tooLarge: string[] = [];
    const changed = [...scan.files].filter(([path, disk]) => !sameDisk(this.#known.get(path)?.disk, disk));
    const batch = new UploadBatch(this.#store);
    await eachLimited(changed, TRANSFER_CONCURRENCY, async ([path, disk]) => {
      if (disk.size > limits.maxFileBytes) {
        tooLarge.push(path);
        return;
      }
      let data: Buffer;
      try {
        data = await readInside(this.#root, path, limits.maxFileBytes);
      } catch (err) {
        this.#log.warn('workspace file not saved', { path, message: messageOf(err) });
        return;
      }
      stats.hashedFiles += 1;
      const sha = sha256(data);
      const k = this.#known.get(path);
      const entry: WorkspaceEntry = {
        path,
        sha256: sha,
        size: data.length,
        executable: disk.executable,
        modifiedAt: disk.mtimeMs,
      };
      if (k !== undefined && k.entry.sha256 === sha && k.entry.executable === disk.executable) {
        // Touched, not changed.
        this.#known.set(path, { entry: k.entry, disk });
        return;
      }
      if (!stored.has(sha)) {
        stored.add(sha);
        if (data.length <= BATCH_BLOB_MAX_BYTES) await batch.add(sha, data);
        else await this.#store.putBlob(sha, data);
        stats.uploadedFiles += 1;
        stats.uploadedBytes += data.length;
      }
      upserts.push({ entry, disk });
    });
    await batch.flush();
    const deletes = [...this.#known.keys()].filter((p) => !scan.files.has(p));
    if (tooLarge.length > 0) {
      this.#onError(
        runnerError(
          'workspace_file_too_large',
          `maxFileBytes: not saved (over ${limits.maxFileBytes} bytes): ${tooLarge.slice(0, 5).join(', ')}${tooLarge.length > 5 ? ` and ${tooLarge.length - 5} more` : ''}`,
        ),
      );
    }
    stats.upserts = upserts.length;
    stats.deletes = deletes.length;
    if (!announce && upserts.length === 0 && deletes.length === 0) return stats;
    upserts.sort((a, b) => (a.entry.path < b.entry.path ? -1 : 1));
    const result = await this.#store.commit({
      upserts: upserts.map((u) => u.entry),
      deletes,
      ...(baseline !== undefined && { baseline }),
    });
    stats.committed = true;
    for (const u of upserts) this.#known.set(u.entry.path, u);
    for (const p of deletes) this.#known.delete(p);
    const expected = this.#generation + 1;
    this.#generation = result.generation;
    this.#log.info('workspace saved', {
      generation: result.generation,
      files: result.files,
      bytes: result.bytes,
      ...stats,
    });
    // Someone else (the Files API) committed since this runner last looked: take their changes.
    if (result.generation !== expected) await this.#pull();
    return stats;
  }
}
