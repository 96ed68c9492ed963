import { describe, expect, it } from 'vitest';
import {
  checkWorkspacePath,
  decodeFrames,
  encodeFrames,
  MAX_WORKSPACE_PATH_BYTES,
  MAX_WORKSPACE_PATH_DEPTH,
  overWorkspaceLimit,
  WorkspaceCommitSchema,
} from '../src/index.ts';

describe('checkWorkspacePath', () => {
  it.each(['a.txt', 'src/main.ts', '.github/workflows/ci.yml', 'dir/..hidden', 'ünïcode/ファイル.md', 'a b/c'])(
    'accepts %j',
    (p) => {
      expect(checkWorkspacePath(p)).toMatchObject({ ok: true, path: p });
    },
  );

  it.each([
    ['', 'empty'],
    ['/etc/passwd', 'absolute'],
    ['../x', '. or ..'],
    ['a/../../x', '. or ..'],
    ['a/./b', '. or ..'],
    ['.', '. or ..'],
    ['a//b', 'empty segments'],
    ['a/', 'empty segments'],
    ['a\\..\\b', 'separator'],
    ['a\u0000b', 'control'],
    ['a\nb', 'control'],
    ['a\u007fb', 'control'],
    ['x'.repeat(MAX_WORKSPACE_PATH_BYTES + 1), 'bytes'],
    [
      Array(MAX_WORKSPACE_PATH_DEPTH + 1)
        .fill('d')
        .join('/'),
      'deep',
    ],
    ['y'.repeat(256), 'segment'],
  ])('refuses %j (%s)', (p, why) => {
    const r = checkWorkspacePath(p);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(why);
  });

  it('refuses what is not a string', () => {
    expect(checkWorkspacePath(3).ok).toBe(false);
  });

  it('counts bytes, not characters', () => {
    // 4 segments of 127 two-byte characters plus 3 slashes: 1019 bytes, 511 characters.
    const seg = 'é'.repeat(127);
    expect(checkWorkspacePath([seg, seg, seg, seg].join('/')).ok).toBe(true);
    expect(checkWorkspacePath([seg, seg, seg, seg, 'abcdef'].join('/')).ok).toBe(false);
    expect(checkWorkspacePath('é'.repeat(128)).ok).toBe(false);
  });
});

describe('workspace schemas', () => {
  it('a commit with a bad path fails validation naming it', () => {
    const r = WorkspaceCommitSchema.safeParse({ upserts: [], deletes: ['../escape'] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['deletes', 0]);
  });

  it('names the limit a workspace is over', () => {
    const limits = { maxFileBytes: 10, maxWorkspaceBytes: 100, maxWorkspaceFiles: 2 };
    expect(overWorkspaceLimit({ files: 2, bytes: 100 }, limits)).toBeNull();
    expect(overWorkspaceLimit({ files: 3, bytes: 1 }, limits)?.limit).toBe('maxWorkspaceFiles');
    expect(overWorkspaceLimit({ files: 1, bytes: 101 }, limits)?.limit).toBe('maxWorkspaceBytes');
  });
});

describe('blob batch frames', () => {
  it('round-trips, empty parts included, and refuses a truncated body', () => {
    const parts = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new TextEncoder().encode('ü')];
    const body = encodeFrames(parts);
    expect(decodeFrames(body)).toEqual(parts);
    expect(decodeFrames(new Uint8Array(0))).toEqual([]);
    expect(decodeFrames(body.subarray(0, body.length - 1))).toBeNull();
    expect(decodeFrames(new Uint8Array([0, 0]))).toBeNull();
  });
});
