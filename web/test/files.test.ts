import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation } from '../src/chat/conversation.ts';
import { byFileLimit, fileTree, fileUrl, tooLargeMessage, uploadPath, viewable } from '../src/files/files.ts';

describe('files panel helpers', () => {
  it("leaves out chosen files over the server's limit and names each with its size and the limit", () => {
    const chosen = [
      { name: 'a.txt', size: 2048 },
      { name: 'big.bin', size: 2049 },
      { name: 'huge.iso', size: 5 * 1024 * 1024 },
    ];
    const { fit, tooLarge } = byFileLimit(chosen, 2048);
    expect(fit.map((f) => f.name)).toEqual(['a.txt']);
    expect(tooLargeMessage(tooLarge.slice(1), 2048)).toBe(
      'Not uploaded: huge.iso (5.0 MB) is over the 2.0 KB limit per file.',
    );
    // Rounded, big.bin would read as the limit's size: both are then given in bytes.
    expect(tooLargeMessage(tooLarge, 2048)).toBe(
      'Not uploaded: big.bin (2,049 bytes), huge.iso (5,242,880 bytes) are over the 2,048 bytes limit per file.',
    );
    // Before the limit is known every file goes, and the server's 413 is the check.
    expect(byFileLimit(chosen, null)).toEqual({ fit: chosen, tooLarge: [] });
  });

  it('encodes each segment of a workspace path and keeps the slashes', () => {
    expect(fileUrl('S1', 'dir/ünï côde#?.txt')).toBe('/api/sessions/S1/files/dir/%C3%BCn%C3%AF%20c%C3%B4de%23%3F.txt');
  });

  it('arranges the flat list as a tree: folders first, sizes summed per folder', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const tree = fileTree([
      { path: 'z.txt', size: 1, modifiedAt: at },
      { path: 'src/b.ts', size: 10, modifiedAt: at },
      { path: 'src/lib/a.ts', size: 5, modifiedAt: at },
      { path: 'a.txt', size: 2, modifiedAt: at },
    ]);
    expect(tree.map((l) => [l.kind, l.path, l.depth, l.size])).toEqual([
      ['folder', 'src', 0, 15],
      ['folder', 'src/lib', 1, 5],
      ['file', 'src/lib/a.ts', 2, 5],
      ['file', 'src/b.ts', 1, 10],
      ['file', 'a.txt', 0, 2],
      ['file', 'z.txt', 0, 1],
    ]);
  });

  it('offers text view only for text-like names under the size cap', () => {
    expect(viewable('notes/readme.md', 100)).toBe(true);
    expect(viewable('Makefile', 100)).toBe(true);
    expect(viewable('image.png', 100)).toBe(false);
    expect(viewable('big.txt', 10 * 1024 * 1024)).toBe(false);
  });

  it('puts uploads into the chosen folder', () => {
    expect(uploadPath('', 'a.txt')).toBe('a.txt');
    expect(uploadPath(' /in/data/ ', 'a.txt')).toBe('in/data/a.txt');
  });

  it('the conversation remembers the latest workspace.saved, which the panel reloads on', () => {
    const conv = applyEvents(emptyConversation(), [
      { id: '01A', type: 'workspace.saved', files: 1, bytes: 3 },
      { id: '01B', type: 'workspace.saved', files: 2, bytes: 5 },
    ]);
    expect(conv.workspaceSaved).toBe('01B');
  });
});
