import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_WORKSPACE_LIMITS,
  type ErrorInfo,
  type WorkspaceCommit,
  type WorkspaceCommitResult,
  type WorkspaceEntry,
  type WorkspaceManifest,
} from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../../test/helpers/poll.ts';
import { createLogger } from '../../src/log.ts';
import { WorkspaceSync, type WorkspaceStore } from '../../src/workspace/sync.ts';

// The runner's save/restore against an in-memory durable copy, on a real filesystem.

/** The durable copy as the hub and R2 keep it, with what crossed the wire counted. */
class MemoryStore implements WorkspaceStore {
  blobs = new Map<string, Uint8Array>();
  files = new Map<string, WorkspaceEntry>();
  generation = 0;
  putBytes = 0;
  puts = 0;
  limits = { ...DEFAULT_WORKSPACE_LIMITS };
  async manifest(): Promise<WorkspaceManifest> {
    return { generation: this.generation, files: [...this.files.values()], limits: this.limits };
  }
  async getBlob(sha: string): Promise<Uint8Array> {
    const b = this.blobs.get(sha);
    if (b === undefined) throw new Error(`no blob ${sha}`);
    return b;
  }
  async putBlob(sha: string, data: Uint8Array): Promise<void> {
    this.puts += 1;
    this.putBytes += data.length;
    this.blobs.set(sha, Uint8Array.from(data));
  }
  batchesPut = 0;
  batchesGot = 0;
  async putBlobs(parts: Uint8Array[]): Promise<string[]> {
    this.batchesPut += 1;
    const shas: string[] = [];
    for (const p of parts) {
      const sha = createHash('sha256').update(p).digest('hex');
      await this.putBlob(sha, p);
      shas.push(sha);
    }
    return shas;
  }
  async getBlobs(shas: string[]): Promise<Uint8Array[]> {
    this.batchesGot += 1;
    return Promise.all(shas.map((s) => this.getBlob(s)));
  }
  async commit(c: WorkspaceCommit): Promise<WorkspaceCommitResult> {
    for (const p of c.deletes) this.files.delete(p);
    for (const u of c.upserts) this.files.set(u.path, u);
    this.generation += 1;
    return {
      generation: this.generation,
      files: this.files.size,
      bytes: [...this.files.values()].reduce((n, f) => n + f.size, 0),
    };
  }
  /** A person's upload through the Files API. */
  userPut(path: string, text: string): void {
    const data = new TextEncoder().encode(text);
    const sha = createHash('sha256').update(data).digest('hex');
    this.blobs.set(sha, data);
    this.files.set(path, { path, sha256: sha, size: data.length, executable: false, modifiedAt: Date.now() });
    this.generation += 1;
  }
}

const dirs: string[] = [];
async function tempDir(name: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), `ws-${name}-`));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function syncFor(root: string, store: WorkspaceStore, errors: ErrorInfo[] = []): WorkspaceSync {
  return new WorkspaceSync({
    root,
    store,
    log: createLogger({ level: 'error', write: () => {} }),
    onError: (e) => errors.push(e),
  });
}

describe('WorkspaceSync', () => {
  it('saves a workspace and restores it into a fresh one, byte for byte, modes kept', async () => {
    const store = new MemoryStore();
    const a = await tempDir('a');
    await mkdir(join(a, 'src/deep/er'), { recursive: true });
    await writeFile(join(a, 'src/deep/er/x.ts'), 'export const x = 1;\n');
    await writeFile(join(a, 'bin.dat'), Buffer.from([0, 1, 2, 255]));
    await writeFile(join(a, 'run.sh'), '#!/bin/sh\necho hi\n');
    await chmod(join(a, 'run.sh'), 0o755);
    await writeFile(join(a, 'empty'), '');
    const first = syncFor(a, store);
    await first.pull();
    expect(await first.save({ announce: true })).toMatchObject({ committed: true, upserts: 4, uploadedFiles: 4 });

    const b = await tempDir('b');
    // Files already there with other modes: the restore sets the durable copy's.
    await writeFile(join(b, 'run.sh'), 'stale');
    await chmod(join(b, 'run.sh'), 0o600);
    await writeFile(join(b, 'bin.dat'), 'stale');
    await chmod(join(b, 'bin.dat'), 0o700);
    const restored = await syncFor(b, store).pull();
    expect(restored).toMatchObject({ written: 4 });
    expect(await readFile(join(b, 'src/deep/er/x.ts'), 'utf8')).toBe('export const x = 1;\n');
    expect(await readFile(join(b, 'bin.dat'))).toEqual(Buffer.from([0, 1, 2, 255]));
    expect((await stat(join(b, 'run.sh'))).mode & 0o777).toBe(0o755);
    expect((await stat(join(b, 'bin.dat'))).mode & 0o777).toBe(0o644);
    expect(await readFile(join(b, 'empty'), 'utf8')).toBe('');
  });

  it('a one-line change to one file in a big workspace moves one file', async () => {
    const store = new MemoryStore();
    const root = await tempDir('inc');
    for (let i = 0; i < 200; i++) await writeFile(join(root, `f${i}.txt`), `${'line\n'.repeat(1000)}${i}\n`);
    const sync = syncFor(root, store);
    await sync.pull();
    await sync.save({ announce: true });
    const before = { puts: store.puts, bytes: store.putBytes };
    await writeFile(join(root, 'f17.txt'), `${'line\n'.repeat(1000)}changed\n`);
    const stats = await sync.save({ announce: true });
    expect(stats).toMatchObject({ upserts: 1, uploadedFiles: 1, hashedFiles: 1, deletes: 0 });
    expect(store.puts - before.puts).toBe(1);
    expect(store.putBytes - before.bytes).toBe(5008);
    // Nothing changed: nothing hashed, nothing moved; announce still commits.
    expect(await sync.save({ announce: true })).toMatchObject({
      upserts: 0,
      hashedFiles: 0,
      uploadedFiles: 0,
      committed: true,
    });
    expect(await sync.save({ announce: false })).toMatchObject({ committed: false });
  });

  it('small files travel in batches: 1,200 files are three uploads and three downloads', async () => {
    const store = new MemoryStore();
    const a = await tempDir('many');
    for (let i = 0; i < 1200; i++) await writeFile(join(a, `f${i}.txt`), `file ${i}\n`);
    await writeFile(join(a, 'big.bin'), Buffer.alloc(300 * 1024, 7));
    const sync = syncFor(a, store);
    await sync.pull();
    expect(await sync.save({ announce: true })).toMatchObject({ upserts: 1201, uploadedFiles: 1201 });
    expect(store.batchesPut).toBe(3);
    expect(store.puts).toBe(1201);
    const b = await tempDir('many-restored');
    expect(await syncFor(b, store).pull()).toMatchObject({ written: 1201 });
    expect(store.batchesGot).toBe(3);
    expect(await readFile(join(b, 'f1199.txt'), 'utf8')).toBe('file 1199\n');
    expect((await readFile(join(b, 'big.bin'))).length).toBe(300 * 1024);
  });

  it('a batch stored under other names than its contents hash to fails the save', async () => {
    const store = new MemoryStore();
    store.putBlobs = async (parts) => parts.map(() => 'f'.repeat(64));
    const root = await tempDir('liar');
    await writeFile(join(root, 'a.txt'), 'a');
    const errors: ErrorInfo[] = [];
    const sync = syncFor(root, store, errors);
    await sync.pull();
    await sync.save({ announce: true });
    expect(store.files.size).toBe(0);
    expect(errors.map((e) => e.code)).toEqual(['workspace_save_failed']);
  });

  it('never saves a symlink or what it points at; deletes reach the durable copy', async () => {
    const store = new MemoryStore();
    const outside = await tempDir('outside');
    await writeFile(join(outside, 'secret'), 'runner secret');
    const root = await tempDir('links');
    await symlink(join(outside, 'secret'), join(root, 'leak'));
    await symlink(outside, join(root, 'leakdir'));
    await writeFile(join(root, 'keep.txt'), 'kept');
    await writeFile(join(root, 'gone.txt'), 'gone');
    const sync = syncFor(root, store);
    await sync.pull();
    await sync.save({ announce: true });
    expect([...store.files.keys()].sort()).toEqual(['gone.txt', 'keep.txt']);
    for (const b of store.blobs.values()) expect(new TextDecoder().decode(b)).not.toContain('runner secret');
    await rm(join(root, 'gone.txt'));
    expect(await sync.save({ announce: false })).toMatchObject({ deletes: 1 });
    expect([...store.files.keys()]).toEqual(['keep.txt']);
  });

  it('a restore writes nothing outside the workspace: bad paths, a planted folder link, a planted file link', async () => {
    const store = new MemoryStore();
    const outside = await tempDir('target');
    await writeFile(join(outside, 'victim'), 'original');
    const root = await tempDir('restore');
    await symlink(outside, join(root, 'sub'));
    await symlink(join(outside, 'victim'), join(root, 'file.txt'));
    const put = (path: string, text: string) => {
      store.userPut(path, text);
    };
    put('sub/victim', 'through a folder link');
    put('file.txt', 'replaces the link, not its target');
    put('ok.txt', 'fine');
    // A tampered manifest (the schema would refuse these; the writer checks again).
    const evil = (path: string) => ({ path, sha256: 'a'.repeat(64), size: 1, executable: false, modifiedAt: 0 });
    store.files.set('../escape', evil('../escape'));
    store.files.set('/abs', evil('/abs'));
    store.blobs.set('a'.repeat(64), new Uint8Array([120]));
    const errors: ErrorInfo[] = [];
    await syncFor(root, store, errors).pull();
    expect(await readFile(join(outside, 'victim'), 'utf8')).toBe('original');
    expect(await readlink(join(root, 'sub'))).toBe(outside);
    expect(await readFile(join(root, 'file.txt'), 'utf8')).toBe('replaces the link, not its target');
    expect(await readFile(join(root, 'ok.txt'), 'utf8')).toBe('fine');
    await expect(stat(join(root, '..', 'escape'))).rejects.toThrow();
    expect(errors.map((e) => e.code)).toEqual(['workspace_restore_failed']);
    expect(errors[0]?.message).toContain('3 file(s) not restored');
  });

  it('a folder checked earlier in the same restore and swapped for a link since is refused at the open', async () => {
    const outside = await tempDir('swap-target');
    const root = await tempDir('swap');
    /** Hands out the big file only once the small one is written, after swapping its folder for a link. */
    class SwappingStore extends MemoryStore {
      override async getBlob(sha: string): Promise<Uint8Array> {
        if (this.blobs.get(sha)?.length !== 300 * 1024) return super.getBlob(sha);
        await until(
          'sub/a.txt restored',
          async () => (await stat(join(root, 'sub', 'a.txt')).catch(() => false)) && true,
        );
        await rm(join(root, 'sub'), { recursive: true });
        await symlink(outside, join(root, 'sub'));
        return super.getBlob(sha);
      }
    }
    const store = new SwappingStore();
    store.userPut('sub/a.txt', 'small, in a batch');
    store.userPut('sub/big.txt', 'x'.repeat(300 * 1024));
    const errors: ErrorInfo[] = [];
    await syncFor(root, store, errors).pull();
    expect(await readdir(outside)).toEqual([]);
    expect(errors[0]?.message).toContain('1 file(s) not restored, e.g. refusing to restore sub/big.txt');
  });

  it('pulls a person’s upload and deletion; an agent’s later edit of a deleted file survives', async () => {
    const store = new MemoryStore();
    const root = await tempDir('pull');
    const sync = syncFor(root, store);
    await sync.pull();
    await writeFile(join(root, 'a.txt'), 'a');
    await writeFile(join(root, 'b.txt'), 'b');
    await sync.save({ announce: true });
    store.userPut('upload.txt', 'from a person');
    store.files.delete('a.txt');
    store.files.delete('b.txt');
    store.generation += 1;
    await writeFile(join(root, 'b.txt'), 'agent changed b');
    await sync.pull();
    expect(await readFile(join(root, 'upload.txt'), 'utf8')).toBe('from a person');
    await expect(stat(join(root, 'a.txt'))).rejects.toThrow();
    expect(await readFile(join(root, 'b.txt'), 'utf8')).toBe('agent changed b');
    await sync.save({ announce: false });
    expect([...store.files.keys()].sort()).toEqual(['b.txt', 'upload.txt']);
  });

  it('a save that finds someone else committed in between takes their change', async () => {
    const store = new MemoryStore();
    const root = await tempDir('race');
    const sync = syncFor(root, store);
    await sync.pull();
    store.userPut('late.txt', 'uploaded while the link was down');
    await writeFile(join(root, 'mine.txt'), 'mine');
    await sync.save({ announce: true });
    expect(await readFile(join(root, 'late.txt'), 'utf8')).toBe('uploaded while the link was down');
    expect([...store.files.keys()].sort()).toEqual(['late.txt', 'mine.txt']);
  });

  it('a file over maxFileBytes is not saved and the session is told which', async () => {
    const store = new MemoryStore();
    store.limits = { ...store.limits, maxFileBytes: 10 };
    const root = await tempDir('big');
    await writeFile(join(root, 'big.bin'), 'x'.repeat(11));
    await writeFile(join(root, 'small.txt'), 'x');
    const errors: ErrorInfo[] = [];
    const sync = syncFor(root, store, errors);
    await sync.pull();
    await sync.save({ announce: true });
    expect([...store.files.keys()]).toEqual(['small.txt']);
    expect(errors).toEqual([
      expect.objectContaining({ code: 'workspace_file_too_large', message: expect.stringContaining('big.bin') }),
    ]);
  });
});
