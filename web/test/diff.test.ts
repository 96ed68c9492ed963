import { describe, expect, it } from 'vitest';
import { clipHunks, parseWorkspaceDiff } from '../src/files/diff.ts';

// The Changes view's reading of the server's git diff text.

const TEXT = [
  'diff --git a/README.md b/README.md',
  '--- a/README.md',
  '+++ b/README.md',
  '@@ -1,2 +1,3 @@',
  ' title',
  '-body',
  '+better body',
  '+more',
  'diff --git a/logo.png b/logo.png',
  'Binary files a/logo.png and b/logo.png differ',
  'diff --git a/old.txt b/old.txt',
  'deleted file mode 100644',
  '--- a/old.txt',
  '+++ /dev/null',
  '@@ -1,1 +0,0 @@',
  '-remove me',
  '\\ No newline at end of file',
  'diff --git a/run.sh b/run.sh',
  'old mode 100644',
  'new mode 100755',
  'diff --git "a/src/\\303\\274n.ts" "b/src/\\303\\274n.ts"',
  'new file mode 100644',
  '--- /dev/null',
  '+++ "b/src/\\303\\274n.ts"',
  '@@ -0,0 +1,1 @@',
  '+export {};',
  'diff --git a/empty b/empty',
  'new file mode 100644',
  '# Diff truncated at 4194304 bytes: 2 more changed file(s) not shown, starting with z',
  '',
].join('\n');

describe('parseWorkspaceDiff', () => {
  it('reads each file’s kind, counts, numbered lines, binary and mode changes, and the truncation trailer', () => {
    const d = parseWorkspaceDiff(TEXT);
    expect(d.files.map((f) => [f.path, f.kind, f.additions, f.deletions, f.binary, f.modeChange])).toEqual([
      ['README.md', 'modified', 2, 1, false, null],
      ['logo.png', 'modified', 0, 0, true, null],
      ['old.txt', 'deleted', 0, 1, false, null],
      ['run.sh', 'mode', 0, 0, false, '100644 → 100755'],
      ['src/ün.ts', 'added', 1, 0, false, null],
      ['empty', 'added', 0, 0, false, null],
    ]);
    expect(d.files[0]?.hunks[0]?.lines).toEqual([
      { kind: 'ctx', text: 'title', old: 1, new: 1 },
      { kind: 'del', text: 'body', old: 2 },
      { kind: 'add', text: 'better body', new: 2 },
      { kind: 'add', text: 'more', new: 3 },
    ]);
    expect(d.files[2]?.hunks[0]?.header).toBe('@@ -1,1 +0,0 @@');
    expect(d.files[2]?.hunks[0]?.lines.at(-1)).toEqual({ kind: 'note', text: 'No newline at end of file' });
    expect(d.files[4]?.hunks[0]?.header).toBe('@@ -0,0 +1,1 @@');
    expect(d.truncated).toMatch(/^# Diff truncated at 4194304 bytes/);
  });

  it('is empty for empty text', () => {
    expect(parseWorkspaceDiff('')).toEqual({ files: [], truncated: null });
  });

  it('clips a file’s hunks to a number of lines and counts the rest', () => {
    const line = { kind: 'ctx' as const, text: 'x' };
    const hunks = [
      { header: 'a', lines: [line, line, line] },
      { header: 'b', lines: [line, line, line] },
      { header: 'c', lines: [line] },
    ];
    const clipped = clipHunks(hunks, 4);
    expect(clipped.hunks.map((h) => [h.header, h.lines.length])).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    expect(clipped.hidden).toBe(3);
    expect(clipHunks(hunks, 7)).toEqual({ hunks, hidden: 0 });
  });
});
