// The workspace diff builder (edge/src/workspace/diff.ts) on workspaces shaped like the bounds it
// has to hold, each as a ratio to `git diff --no-index` of the same two trees on disk, measured
// in the same run. Ours reads from memory and git from disk, so the ratio is an upper bound on
// what the builder costs next to git; the absolute times are what one request's CPU is.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DiffFile, workspaceDiff } from '../../edge/src/workspace/diff.ts';
import { median } from '../stats.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

type Tree = Record<string, string>;

const lines = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag} line ${i} ${'x'.repeat(40)}\n`).join('');

function manifest(tree: Tree, store: Map<string, Uint8Array>): DiffFile[] {
  return Object.entries(tree).map(([path, text]) => {
    const bytes = new TextEncoder().encode(text);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    store.set(sha256, bytes);
    return { path, sha256, size: bytes.length, executable: false };
  });
}

function writeTree(root: string, tree: Tree): void {
  mkdirSync(root, { recursive: true });
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

async function scenario(name: string, before: Tree, after: Tree) {
  const store = new Map<string, Uint8Array>();
  const b = manifest(before, store);
  const a = manifest(after, store);
  const read = async (shas: string[]) => shas.map((s) => store.get(s) as Uint8Array);
  const dir = mkdtempSync(join(tmpdir(), 'bench-diff-'));
  try {
    writeTree(join(dir, 'a'), before);
    writeTree(join(dir, 'b'), after);
    const ours: number[] = [];
    const git: number[] = [];
    let out = { text: '', files: 0, omitted: 0 };
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      out = await workspaceDiff(b, a, read);
      ours.push(performance.now() - t);
      t = performance.now();
      try {
        execFileSync('git', ['diff', '--no-index', '--no-color', 'a', 'b'], {
          cwd: dir,
          maxBuffer: 1 << 30,
          stdio: ['ignore', 'ignore', 'ignore'],
        });
      } catch {
        // exit 1: the trees differ
      }
      git.push(performance.now() - t);
    }
    const o = median(ours);
    const g = median(git);
    console.log(
      `${name.padEnd(44)} ours ${o.toFixed(0).padStart(5)} ms, git ${g.toFixed(0).padStart(5)} ms, ratio ${(o / g).toFixed(2)}x; ` +
        `${(out.text.length / 1e6).toFixed(2)} MB text, ${out.files} files${out.omitted > 0 ? `, ${out.omitted} omitted` : ''}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`bench/diff: median of ${ROUNDS} rounds; ratio = ours / git diff --no-index on the same trees`);
const big = lines(15_000, 'same');
await scenario(
  '0.8 MB file, one line changed',
  { 'a.txt': big },
  { 'a.txt': big.replace('same line 7000 ', 'CHANGED ') },
);
await scenario('0.8 MB file, every line changed', { 'a.txt': big }, { 'a.txt': lines(15_000, 'new') });
const small = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`d${i % 50}/f${i}.txt`, lines(20, `f${i}`)]));
await scenario('5,000 files, one changed', small, { ...small, 'd7/f7.txt': 'changed\n' });
await scenario('5,000 files, all added (4 MiB cap)', {}, small);
