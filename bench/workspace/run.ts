// bench/workspace: the runner's durable-workspace save and restore (runner/src/workspace/sync.ts)
// for a 1 MB, a 50 MB and a 5,000-file workspace: time and bytes moved for the first save, a save
// with nothing changed, a save after a one-line change to one file, and a restore into an empty
// workspace. Twice, side by side: against an in-memory durable copy (the runner's own work: walk,
// hash, read, write), and with --edge through the real edge (`npm start`'s stack: the Worker in
// workerd, the hub, local R2 on disk) over loopback HTTP, as a live runner of each session would.
// The bytes are what crosses the wire (counted at the store interface).
// Run: node bench/workspace/run.ts [--edge]
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
import { createLogger } from '../../runner/src/log.ts';
import { WorkspaceSync, type WorkspaceStore } from '../../runner/src/workspace/sync.ts';

/** Counts what crosses the store interface, in front of any store. */
class Counted implements WorkspaceStore {
  up = 0;
  down = 0;
  private readonly inner: WorkspaceStore;
  constructor(inner: WorkspaceStore) {
    this.inner = inner;
  }
  manifest(): Promise<WorkspaceManifest> {
    return this.inner.manifest();
  }
  async getBlob(sha: string): Promise<Uint8Array> {
    const b = await this.inner.getBlob(sha);
    this.down += b.length;
    return b;
  }
  async putBlob(sha: string, data: Uint8Array): Promise<void> {
    this.up += data.length;
    await this.inner.putBlob(sha, data);
  }
  async putBlobs(parts: Uint8Array[]): Promise<string[]> {
    for (const p of parts) this.up += p.length;
    return this.inner.putBlobs(parts);
  }
  async getBlobs(shas: string[]): Promise<Uint8Array[]> {
    const got = await this.inner.getBlobs(shas);
    for (const b of got) this.down += b.length;
    return got;
  }
  commit(c: WorkspaceCommit): Promise<WorkspaceCommitResult> {
    return this.inner.commit(c);
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

async function scenario(
  name: string,
  files: number,
  bytesPerFile: number,
  newStore: () => Promise<WorkspaceStore>,
): Promise<void> {
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
      const t0 = performance.now();
      await f();
      return { ms: performance.now() - t0, up: store.up - up0, down: store.down - down0 };
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
        `one line ${oneLine.ms.toFixed(0).padStart(4)} ms ${mb(oneLine.up)} up (${((oneLine.up / total) * 100).toFixed(3)} % of the workspace) | ` +
        `restore ${restore.ms.toFixed(0).padStart(5)} ms ${mb(restore.down).padStart(9)} down`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SCENARIOS: Array<[string, number, number]> = [
  ['1 MB (10 × 100 KB)', 10, 100 * 1024],
  ['50 MB (50 × 1 MB)', 50, 1024 * 1024],
  ['5,000 files × 1 KB', 5000, 1024],
];

for (const [name, files, size] of SCENARIOS)
  await scenario(`memory: ${name}`, files, size, async () => new MemoryStore());
if (process.argv.includes('--edge')) {
  const { edgeStores } = await import('./edge.ts');
  const edge = await edgeStores();
  try {
    for (const [name, files, size] of SCENARIOS) await scenario(`edge: ${name}`, files, size, edge.next);
  } finally {
    await edge.stop();
  }
}
