// bench/workspace: the runner's durable-workspace save and restore (runner/src/workspace/sync.ts)
// for a 1 MB, a 50 MB and a 5,000-file workspace: time and bytes moved for the first save, a save
// with nothing changed, a save after a one-line change to one file, and a restore into an empty
// workspace. Twice, side by side: against an in-memory durable copy (the runner's own work: walk,
// hash, read, write), and with --edge through the real edge (`npm start`'s stack: the Worker in
// workerd, the hub, local R2 on disk) over loopback HTTP, as a live runner of each session would.
// The bytes are what crosses the wire (counted at the store interface).
// Under each line, where the time went: the runner's own work vs waiting on the store, by call.
// Run: node bench/workspace/run.ts [--edge] [--only <part of a scenario's name>]
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_WORKSPACE_LIMITS,
  type WorkspaceCommit,
  type WorkspaceCommitResult,
  type WorkspaceEntry,
  type WorkspaceManifest,
} from '@switchyard/protocol';
import { createLogger, WorkspaceSync, type WorkspaceStore } from '@switchyard/runner/workspace';

type Op = 'manifest' | 'put' | 'put batch' | 'get' | 'get batch' | 'commit';

/**
 * Counts what crosses the store interface, in front of any store, and where the time goes: each
 * kind of call's count and summed latency, and the wall time with at least one call in flight
 * (the rest of a save or restore is the runner's own work: walk, stat, hash, read, write).
 */
class Counted implements WorkspaceStore {
  up = 0;
  down = 0;
  /** Blobs, each way. */
  upFiles = 0;
  downFiles = 0;
  ops = new Map<Op, { n: number; ms: number }>();
  busyMs = 0;
  #inFlight = 0;
  #busySince = 0;
  private readonly inner: WorkspaceStore;
  constructor(inner: WorkspaceStore) {
    this.inner = inner;
  }
  reset(): void {
    this.ops.clear();
    this.busyMs = 0;
  }
  async #timed<T>(op: Op, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    if (this.#inFlight++ === 0) this.#busySince = t0;
    try {
      return await f();
    } finally {
      const t1 = performance.now();
      if (--this.#inFlight === 0) this.busyMs += t1 - this.#busySince;
      const o = this.ops.get(op) ?? { n: 0, ms: 0 };
      o.n += 1;
      o.ms += t1 - t0;
      this.ops.set(op, o);
    }
  }
  manifest(): Promise<WorkspaceManifest> {
    return this.#timed('manifest', () => this.inner.manifest());
  }
  async getBlob(sha: string): Promise<Uint8Array> {
    const b = await this.#timed('get', () => this.inner.getBlob(sha));
    this.down += b.length;
    this.downFiles += 1;
    return b;
  }
  async putBlob(sha: string, data: Uint8Array): Promise<void> {
    this.up += data.length;
    this.upFiles += 1;
    await this.#timed('put', () => this.inner.putBlob(sha, data));
  }
  async putBlobs(parts: Uint8Array[]): Promise<string[]> {
    for (const p of parts) this.up += p.length;
    this.upFiles += parts.length;
    return this.#timed('put batch', () => this.inner.putBlobs(parts));
  }
  async getBlobs(shas: string[]): Promise<Uint8Array[]> {
    const got = await this.#timed('get batch', () => this.inner.getBlobs(shas));
    for (const b of got) this.down += b.length;
    this.downFiles += got.length;
    return got;
  }
  commit(c: WorkspaceCommit): Promise<WorkspaceCommitResult> {
    return this.#timed('commit', () => this.inner.commit(c));
  }
  /** `runner 120 ms, store 900 ms (put batch 10× Σ3000 ms, commit 1× 400 ms)`. */
  breakdown(wallMs: number): string {
    const parts = [...this.ops].map(([op, o]) => `${op} ${o.n}× Σ${o.ms.toFixed(0)} ms`);
    return `runner ${(wallMs - this.busyMs).toFixed(0)} ms, waiting on the store ${this.busyMs.toFixed(0)} ms (${parts.join(', ')})`;
  }
}

class MemoryStore implements WorkspaceStore {
  readonly blobs = new Map<string, Uint8Array>();
  readonly files = new Map<string, WorkspaceEntry>();
  generation = 0;
  async manifest(): Promise<WorkspaceManifest> {
    return {
      generation: this.generation,
      files: [...this.files.values()],
      limits: { ...DEFAULT_WORKSPACE_LIMITS, maxWorkspaceFiles: 100_000 },
    };
  }
  async getBlob(sha: string): Promise<Uint8Array> {
    return this.blobs.get(sha) as Uint8Array;
  }
  async putBlob(sha: string, data: Uint8Array): Promise<void> {
    this.blobs.set(sha, data);
  }
  async putBlobs(parts: Uint8Array[]): Promise<string[]> {
    return parts.map((p) => {
      const sha = createHash('sha256').update(p).digest('hex');
      this.blobs.set(sha, p);
      return sha;
    });
  }
  async getBlobs(shas: string[]): Promise<Uint8Array[]> {
    return shas.map((s) => this.blobs.get(s) as Uint8Array);
  }
  async commit(c: WorkspaceCommit): Promise<WorkspaceCommitResult> {
    for (const p of c.deletes) this.files.delete(p);
    for (const u of c.upserts) this.files.set(u.path, u);
    this.generation += 1;
    return { generation: this.generation, files: this.files.size, bytes: 0 };
  }
}

const quiet = createLogger({ level: 'error', write: () => {} });
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;

/** Incompressible-looking, distinct content (a counter through sha256), text lines. */
function content(seed: string, bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${createHash('sha256').update(`${seed}:${i}`).digest('hex')}\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join('').slice(0, bytes);
}

interface Timings {
  first: number;
  idle: number;
  oneLine: number;
  restore: number;
}

async function scenario(
  name: string,
  files: number,
  bytesPerFile: number,
  newStore: () => Promise<WorkspaceStore>,
): Promise<Timings> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ws-'));
  try {
    const a = join(dir, 'a');
    for (let i = 0; i < files; i++) {
      const sub = join(a, `d${i % 50}`);
      mkdirSync(sub, { recursive: true });
      writeFileSync(join(sub, `f${i}.txt`), content(`${name}-${i}`, bytesPerFile));
    }
    const total = files * bytesPerFile;
    const store = new Counted(await newStore());
    const sync = new WorkspaceSync({ root: a, store, log: quiet, onError: (e) => console.error(e.message) });
    await sync.pull();
    const time = async (f: () => Promise<unknown>) => {
      const up0 = store.up;
      const down0 = store.down;
      const files0 = store.upFiles + store.downFiles;
      store.reset();
      const t0 = performance.now();
      await f();
      const ms = performance.now() - t0;
      const files = store.upFiles + store.downFiles - files0;
      return { ms, up: store.up - up0, down: store.down - down0, files, where: store.breakdown(ms) };
    };
    const first = await time(() => sync.save({ announce: true }));
    const idle = await time(() => sync.save({ announce: true }));
    appendFileSync(join(a, 'd7', 'f7.txt'), 'one more line\n');
    const oneLine = await time(() => sync.save({ announce: true }));
    const b = join(dir, 'b');
    mkdirSync(b);
    const restore = await time(() =>
      new WorkspaceSync({ root: b, store, log: quiet, onError: (e) => console.error(e.message) }).pull(),
    );
    console.log(
      `${name.padEnd(32)} ${String(files).padStart(5)} files ${mb(total).padStart(9)} | ` +
        `first save ${first.ms.toFixed(0).padStart(5)} ms ${mb(first.up).padStart(9)} up | ` +
        `no change ${idle.ms.toFixed(0).padStart(4)} ms ${mb(idle.up)} up | ` +
        `one line ${oneLine.ms.toFixed(0).padStart(4)} ms ${oneLine.files} file(s), ${(oneLine.up / 1024).toFixed(1)} KB up (${((oneLine.up / total) * 100).toFixed(3)} % of the workspace) | ` +
        `restore ${restore.ms.toFixed(0).padStart(5)} ms ${mb(restore.down).padStart(9)} down`,
    );
    console.log(`  first save: ${first.where}`);
    console.log(`  no change:  ${idle.where}`);
    console.log(`  one line:   ${oneLine.where}`);
    console.log(`  restore:    ${restore.where}`);
    return { first: first.ms, idle: idle.ms, oneLine: oneLine.ms, restore: restore.ms };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SCENARIOS: Array<[string, number, number]> = [
  ['1 MB (10 × 100 KB)', 10, 100 * 1024],
  ['50 MB (50 × 1 MB)', 50, 1024 * 1024],
  ['5,000 files × 1 KB', 5000, 1024],
];

const onlyAt = process.argv.indexOf('--only');
const only = onlyAt > 0 ? (process.argv[onlyAt + 1] ?? '') : '';
const picked = SCENARIOS.filter(([name]) => name.includes(only));
const inMemory = new Map<string, Timings>();
for (const [name, files, size] of picked)
  inMemory.set(name, await scenario(`memory: ${name}`, files, size, async () => new MemoryStore()));
if (process.argv.includes('--edge')) {
  const { edgeStores } = await import('./edge.ts');
  const edge = await edgeStores();
  const ratios: string[] = [];
  try {
    for (const [name, files, size] of picked) {
      const e = await scenario(`edge: ${name}`, files, size, edge.next);
      const m = inMemory.get(name) as Timings;
      const x = (k: keyof Timings) => `${(e[k] / Math.max(m[k], 1)).toFixed(1)}×`;
      ratios.push(
        `${name.padEnd(24)} first save ${x('first')}, no change ${x('idle')}, one line ${x('oneLine')}, restore ${x('restore')}`,
      );
    }
  } finally {
    await edge.stop();
  }
  // The same run's in-memory store is the baseline: what the edge adds to the runner's own work.
  console.log('edge ÷ memory (same run):');
  for (const r of ratios) console.log(`  ${r}`);
}
