import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { asText, DIFF_LIMITS, type DiffFile, gitQuote, workspaceDiff } from '../../src/workspace/diff.ts';

// The pure diff builder, checked against the real git binary: `git apply` of our text onto the
// baseline tree must give the current tree, file for file and mode for mode.

type Tree = Record<string, { content: string | Uint8Array; executable?: boolean }>;

const bytesOf = (c: string | Uint8Array) => (typeof c === 'string' ? new TextEncoder().encode(c) : c);

/** A tree as manifest entries, and a blob store to read them from. */
function manifest(tree: Tree, store: Map<string, Uint8Array>): DiffFile[] {
  return Object.entries(tree).map(([path, f]) => {
    const bytes = bytesOf(f.content);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    store.set(sha256, bytes);
    return { path, sha256, size: bytes.length, executable: f.executable ?? false };
  });
}

async function diffOf(before: Tree, after: Tree, opts: Parameters<typeof workspaceDiff>[3] = {}) {
  const store = new Map<string, Uint8Array>();
  const reads: string[] = [];
  const batches: string[][] = [];
  const b = manifest(before, store);
  const a = manifest(after, store);
  const result = await workspaceDiff(
    b,
    a,
    async (shas) => {
      batches.push(shas);
      return shas.map((sha) => {
        reads.push(sha);
        const got = store.get(sha);
        if (got === undefined) throw new Error(`no blob ${sha}`);
        return got;
      });
    },
    opts,
  );
  return { ...result, reads, batches, store, before: b, after: a };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function writeTree(tree: Tree): string {
  const dir = mkdtempSync(join(tmpdir(), 'ws-diff-'));
  dirs.push(dir);
  for (const [path, f] of Object.entries(tree)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), bytesOf(f.content));
    chmodSync(join(dir, path), f.executable ? 0o755 : 0o644);
  }
  return dir;
}

function git(dir: string, args: string[], input?: string): string {
  return execFileSync('git', args, { cwd: dir, input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/** The files of `dir` (no .git) with content and executable bit. */
function readTree(dir: string, paths: string[]): Record<string, { content: string; executable: boolean }> {
  const out: Record<string, { content: string; executable: boolean }> = {};
  for (const p of paths) {
    try {
      const st = statSync(join(dir, p));
      out[p] = { content: readFileSync(join(dir, p), 'utf8'), executable: (st.mode & 0o100) !== 0 };
    } catch {
      // absent
    }
  }
  return out;
}

/** Applies `patch` with `git apply` onto a checkout of `before` and returns the result. */
function applied(before: Tree, patch: string, paths: string[]) {
  const dir = writeTree(before);
  git(dir, ['init', '-q']);
  git(dir, ['apply', '--whitespace=nowarn', '-'], patch);
  return readTree(dir, paths);
}

const normalized = (t: Tree, paths: string[]) =>
  Object.fromEntries(
    paths
      .filter((p) => t[p] !== undefined)
      .map((p) => [
        p,
        { content: new TextDecoder().decode(bytesOf(t[p]?.content ?? '')), executable: t[p]?.executable ?? false },
      ]),
  );

const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');

const BEFORE: Tree = {
  'README.md': { content: lines(20) },
  'gone.txt': { content: 'bye\n' },
  'run.sh': { content: '#!/bin/sh\necho hi\n' },
  'tool.sh': { content: 'echo 1\n' },
  'same.txt': { content: 'unchanged\n' },
  'no-eol.txt': { content: 'a\nb' },
  'src/ünï côde "q".txt': { content: 'x\n' },
};
const AFTER: Tree = {
  'README.md': { content: lines(20).replace('line 5\n', 'line five\n').replace('line 18\n', '') },
  'run.sh': { content: '#!/bin/sh\necho hi\n', executable: true },
  'tool.sh': { content: 'echo 2\n', executable: true },
  'same.txt': { content: 'unchanged\n' },
  'no-eol.txt': { content: 'a\nb\nc' },
  'src/ünï côde "q".txt': { content: 'y\n' },
  'new/empty': { content: '' },
  'new/file.txt': { content: 'hello\nworld\n' },
  '.git/config': { content: '[core]\n' },
  'vendor/lib/.git/HEAD': { content: 'ref: x\n' },
};
const ALL = [...new Set([...Object.keys(BEFORE), ...Object.keys(AFTER)])].filter((p) => !p.includes('.git/'));

describe('workspaceDiff', () => {
  it('is text git apply turns the baseline into the current tree (modified, added, deleted, modes, no EOL)', async () => {
    const d = await diffOf(BEFORE, AFTER);
    expect(applied(BEFORE, d.text, ALL)).toEqual(normalized(AFTER, ALL));
    expect(d.files).toBe(8);
    expect(d.omitted).toBe(0);
  });

  it('prints git’s headers and hunks with three lines of context', async () => {
    const { text } = await diffOf(BEFORE, AFTER);
    expect(text).toContain(
      [
        'diff --git a/README.md b/README.md',
        '--- a/README.md',
        '+++ b/README.md',
        '@@ -2,7 +2,7 @@',
        ' line 2',
        ' line 3',
        ' line 4',
        '-line 5',
        '+line five',
        ' line 6',
        ' line 7',
        ' line 8',
      ].join('\n'),
    );
    expect(text).toContain(
      'diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n',
    );
    expect(text).toContain('diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n');
    expect(text).not.toContain('+++ b/run.sh');
    expect(text).toContain(
      'diff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\n--- a/tool.sh\n+++ b/tool.sh\n',
    );
    expect(text).toContain('diff --git a/new/empty b/new/empty\nnew file mode 100644\n');
    expect(text).toContain('--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n');
    expect(text).toContain('-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n');
    expect(text).toContain('diff --git "a/src/\\303\\274n\\303\\257 c\\303\\264de \\"q\\".txt" ');
    expect(text).not.toContain('same.txt');
    expect(text).not.toContain('.git/');
  });

  it('matches git diff’s own text for the same change', async () => {
    const dir = writeTree(BEFORE);
    git(dir, ['init', '-q']);
    git(dir, ['add', '-A']);
    git(dir, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base']);
    rmSync(join(dir, 'gone.txt'));
    for (const [p, f] of Object.entries(AFTER)) {
      if (p.includes('.git/')) continue;
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), bytesOf(f.content));
      chmodSync(join(dir, p), f.executable ? 0o755 : 0o644);
    }
    git(dir, ['add', '-A']);
    const theirs = git(dir, ['diff', '--cached', '--no-color', '--no-renames'])
      .split('\n')
      .filter((l) => !l.startsWith('index '))
      .join('\n')
      // Cosmetic differences git apply ignores: git prints the enclosing "function" after a hunk
      // header, a tab after a name with a space, and leaves out a hunk count of 1.
      .replace(/^(@@ .* @@) .*$/gm, '$1')
      .replace(/^((?:---|\+\+\+) .*)\t$/gm, '$1')
      .replace(/^@@ -(\d+) /gm, '@@ -$1,1 ')
      .replace(/^(@@ -\S+) \+(\d+) @@/gm, '$1 +$2,1 @@');
    expect((await diffOf(BEFORE, AFTER)).text).toBe(theirs);
  });

  it('reads no blob of an unchanged path, and each changed side once', async () => {
    const d = await diffOf(BEFORE, AFTER);
    const sha = (t: DiffFile[], p: string) => t.find((f) => f.path === p)?.sha256;
    expect(d.reads).not.toContain(sha(d.before, 'same.txt'));
    // A mode-only change has the same content on both sides: nothing to read.
    expect(d.reads).not.toContain(sha(d.after, 'run.sh'));
    expect(d.reads).not.toContain(sha(d.after, '.git/config'));
    expect(new Set(d.reads).size).toBe(d.reads.length);
    // Small files: one batch.
    expect(d.batches).toHaveLength(1);
  });

  it('reads in batches of at most 8 MiB (whole files) and 256 files, stopping once the text is full', async () => {
    const mib = (n: number, c: string) => `${c.repeat(1024 * 1024 * n - 1)}\n`;
    const big = await diffOf(
      {},
      { a: { content: mib(0.75, 'a') }, b: { content: mib(0.75, 'b') } },
      {
        limits: { ...DIFF_LIMITS, maxDiffBytes: 64 * 1024 * 1024 },
      },
    );
    expect(big.batches.map((b) => b.length)).toEqual([2]);
    const many = Object.fromEntries(
      Array.from({ length: 600 }, (_, i) => [`f${String(i).padStart(3, '0')}`, { content: `${i}\n` }]),
    );
    const d = await diffOf({}, many);
    expect(d.batches.map((b) => b.length)).toEqual([256, 256, 88]);
    const heavy = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [
        `h${String(i).padStart(2, '0')}`,
        { content: mib(1, String.fromCharCode(97 + i)) },
      ]),
    );
    const sized = await diffOf({}, heavy, {
      limits: { ...DIFF_LIMITS, maxFileBytes: 2 * 1024 * 1024, maxDiffBytes: 64 * 1024 * 1024 },
    });
    expect(sized.batches.map((b) => b.length)).toEqual([8, 4]);
    const cut = await diffOf({}, many, { limits: { ...DIFF_LIMITS, maxDiffBytes: 2000 } });
    expect(cut.batches).toHaveLength(1);
  });

  it('shows binary content (a NUL, or not UTF-8) and files over maxFileBytes as git’s binary line, unread when too large', async () => {
    const before: Tree = { 'img.bin': { content: new Uint8Array([1, 0, 2]) }, 'big.txt': { content: 'small\n' } };
    const after: Tree = {
      'img.bin': { content: new Uint8Array([1, 0, 3]) },
      'latin1.txt': { content: new Uint8Array([0x63, 0x61, 0x66, 0xe9]) },
      'big.txt': { content: 'x'.repeat(100) },
    };
    const d = await diffOf(before, after, { limits: { ...DIFF_LIMITS, maxFileBytes: 50 } });
    expect(d.text).toContain('diff --git a/img.bin b/img.bin\nBinary files a/img.bin and b/img.bin differ\n');
    expect(d.text).toContain('new file mode 100644\nBinary files /dev/null and b/latin1.txt differ\n');
    expect(d.text).toContain('Binary files a/big.txt and b/big.txt differ\n');
    expect(d.reads).not.toContain(d.after.find((f) => f.path === 'big.txt')?.sha256);
    expect(d.reads).not.toContain(d.before.find((f) => f.path === 'big.txt')?.sha256);
    expect(asText(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))).toBe('\ufeffa');
  });

  it('stops before the file that would pass maxDiffBytes, with a trailer git apply tolerates', async () => {
    const after: Tree = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, { content: lines(50) }]));
    const full = await diffOf({}, after);
    const one = full.text.length / 10;
    const d = await diffOf({}, after, { limits: { ...DIFF_LIMITS, maxDiffBytes: Math.floor(one * 3.5) } });
    expect(d.files).toBe(3);
    expect(d.omitted).toBe(7);
    expect(d.text.trimEnd().split('\n').at(-1)).toBe(
      `# Diff truncated at ${Math.floor(one * 3.5)} bytes: 7 more changed file(s) not shown, starting with f3.txt`,
    );
    const paths = Object.keys(after);
    expect(Object.keys(applied({}, d.text, paths))).toEqual(['f0.txt', 'f1.txt', 'f2.txt']);
  });

  it('shows a file changed past maxEditLength (or maxEditWork) as a whole replacement that still applies', async () => {
    const before: Tree = { 'a.txt': { content: lines(40, 'old') }, 'b.txt': { content: 'x\ny' } };
    const after: Tree = { 'a.txt': { content: lines(40, 'new') }, 'b.txt': { content: 'p\nq\nr' } };
    const d = await diffOf(before, after, { limits: { ...DIFF_LIMITS, maxEditLength: 5 } });
    expect(d.text).toContain('@@ -1,40 +1,40 @@\n-old 1\n');
    expect(applied(before, d.text, ['a.txt', 'b.txt'])).toEqual(normalized(after, ['a.txt', 'b.txt']));
    // A long file gets a lower edit bound: lines × edits stays under maxEditWork.
    const long: Tree = { 'a.txt': { content: lines(40, 'same') } };
    const oneEdit: Tree = { 'a.txt': { content: lines(40, 'same').replace('same 20\n', 'changed\n') } };
    expect((await diffOf(long, oneEdit)).text).toContain('@@ -17,7 +17,7 @@');
    const capped = await diffOf(long, oneEdit, { limits: { ...DIFF_LIMITS, maxEditWork: 82 } });
    expect(capped.text).toContain('@@ -1,40 +1,40 @@');
  });

  it('limits to one path, and an empty diff is empty text', async () => {
    const d = await diffOf(BEFORE, AFTER, { path: 'gone.txt' });
    expect(d.files).toBe(1);
    expect(d.text.startsWith('diff --git a/gone.txt b/gone.txt\n')).toBe(true);
    expect(d.text.match(/^diff --git/gm)).toHaveLength(1);
    expect((await diffOf(BEFORE, BEFORE)).text).toBe('');
    expect((await diffOf(BEFORE, AFTER, { path: '.git/config' })).text).toBe('');
  });

  it('quotes names as git does', () => {
    expect(gitQuote('a/plain name.txt')).toBe('a/plain name.txt');
    expect(gitQuote('a/é"')).toBe('"a/\\303\\251\\""');
  });
});
