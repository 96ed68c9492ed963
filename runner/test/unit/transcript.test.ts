import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { claudeTranscriptPath, TranscriptSchema } from '@switchyard/protocol';
import { collectTranscript, MAX_TRANSCRIPT_BYTES, restoreTranscript, sha256 } from '../../src/serve/transcript.ts';
import { gzipSync } from 'node:zlib';

const dir = () => mkdtempSync(join(tmpdir(), 'sy-tr-'));
const conversation = '{"type":"user","text":"hello \u2028 there"}\n{"type":"assistant","text":"hi"}\n';

describe('transcripts', () => {
  test('claude: collected from the project dir, restored under another config dir and workspace', async () => {
    const a = { configDir: dir(), workspace: '/work/ws-a' };
    const file = claudeTranscriptPath(a.configDir, a.workspace, 'abc-123');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, conversation);
    const collected = await collectTranscript('claude', 'abc-123', a);
    expect(collected.ok).toBe(true);
    const t = collected.ok ? collected.value : undefined;
    expect(t).toMatchObject({
      backend: 'claude',
      resumeId: 'abc-123',
      encoding: 'gzip+base64',
      bytes: Buffer.byteLength(conversation),
    });
    expect(TranscriptSchema.safeParse(t).success).toBe(true);

    const b = { configDir: dir(), workspace: '/work/ws-b' };
    const restored = await restoreTranscript('claude', t!, b);
    expect(restored).toEqual({ ok: true, value: 'abc-123' });
    expect(readFileSync(claudeTranscriptPath(b.configDir, b.workspace, 'abc-123'), 'utf8')).toBe(conversation);
  });

  test('pi: the session file name travels, the directory is the restoring runner’s, the header cwd is rehomed', async () => {
    const a = { configDir: dir(), workspace: '/w-old' };
    const file = join(a.configDir, 'sessions', '2026-01-01T00-00-00-000Z_id.jsonl');
    mkdirSync(dirname(file), { recursive: true });
    const header = '{"type":"session","version":3,"id":"x","cwd":"/w-old"}\n';
    writeFileSync(file, header + conversation);
    const collected = await collectTranscript('pi', file, a);
    const t = collected.ok ? collected.value : undefined;
    expect(t?.resumeId).toBe('2026-01-01T00-00-00-000Z_id.jsonl');
    const b = { configDir: dir(), workspace: '/w-new' };
    const restored = await restoreTranscript('pi', t!, b);
    const handle = join(b.configDir, 'sessions', '2026-01-01T00-00-00-000Z_id.jsonl');
    expect(restored).toEqual({ ok: true, value: handle });
    // pi refuses a session whose stored cwd is gone; only the header changes.
    expect(readFileSync(handle, 'utf8')).toBe(
      `{"type":"session","version":3,"id":"x","cwd":"/w-new"}\n${conversation}`,
    );
  });

  test("a transcript path the CLI replaced with a symlink out of its config dir (/proc/self/environ: the runner's own) is refused", async () => {
    const p = { configDir: dir(), workspace: '/w' };
    const file = claudeTranscriptPath(p.configDir, p.workspace, 's1');
    mkdirSync(dirname(file), { recursive: true });
    symlinkSync('/proc/self/environ', file);
    const t = await collectTranscript('claude', 's1', p);
    expect(t).toMatchObject({
      ok: false,
      error: { code: 'transcript_unreadable', message: expect.stringMatching(/s1\.jsonl is a link$/) },
    });
    const pi = join(p.configDir, 'sessions', 'x.jsonl');
    mkdirSync(dirname(pi), { recursive: true });
    symlinkSync('/proc/self/environ', pi);
    expect(await collectTranscript('pi', pi, p)).toMatchObject({ ok: false, error: { code: 'transcript_unreadable' } });
    expect(await collectTranscript('pi', '/proc/self/environ', p)).toMatchObject({
      ok: false,
      error: { code: 'transcript_unreadable' },
    });
  });

  test('a restore never writes through a symlink the CLI planted', async () => {
    const a = { configDir: dir(), workspace: '/w' };
    const file = claudeTranscriptPath(a.configDir, a.workspace, 's2');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, conversation);
    const collected = await collectTranscript('claude', 's2', a);
    if (!collected.ok || !collected.value) throw new Error('not collected');
    const b = { configDir: dir(), workspace: '/w' };
    const victim = join(dir(), 'victim.txt');
    writeFileSync(victim, 'untouched');
    const target = claudeTranscriptPath(b.configDir, b.workspace, 's2');
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(victim, target);
    expect(await restoreTranscript('claude', collected.value, b)).toMatchObject({
      ok: false,
      error: { code: 'transcript_unwritable' },
    });
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
  });

  test('nothing on disk yet is not an error; corruption, backend mismatch and path tricks are', async () => {
    const p = { configDir: dir(), workspace: '/w' };
    expect(await collectTranscript('claude', 'none-yet', p)).toEqual({ ok: true, value: undefined });
    expect(await collectTranscript('claude', undefined, p)).toEqual({ ok: true, value: undefined });
    const file = claudeTranscriptPath(p.configDir, p.workspace, 's1');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, conversation);
    const t = await collectTranscript('claude', 's1', p);
    if (!t.ok || !t.value) throw new Error('no transcript');
    expect(await restoreTranscript('pi', t.value, p)).toMatchObject({
      ok: false,
      error: { code: 'transcript_backend_mismatch' },
    });
    expect(await restoreTranscript('claude', { ...t.value, sha256: '0'.repeat(64) }, p)).toMatchObject({
      ok: false,
      error: { code: 'transcript_corrupt' },
    });
    expect(TranscriptSchema.safeParse({ ...t.value, resumeId: '../../etc/passwd' }).success).toBe(false);
  });

  test('a transcript file over the limit is refused from its size, without reading it', async () => {
    const a = { configDir: dir(), workspace: '/work/ws' };
    const file = claudeTranscriptPath(a.configDir, a.workspace, 'big');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, conversation);
    // Sparse, so it takes no disk; 3 GiB is more than one read into a Buffer can even hold.
    truncateSync(file, 3 * 1024 ** 3);
    const collected = await collectTranscript('claude', 'big', a);
    expect(collected).toMatchObject({ ok: false, error: { code: 'transcript_too_large' } });
    expect(collected.ok ? '' : collected.error.message).toMatch(/is 3221225472 bytes, over the/);
  });

  test('a decompression bomb is stopped at its declared size, and a huge declaration is refused before decompressing', async () => {
    const p = { configDir: dir(), workspace: '/work/ws' };
    // 128 MiB of zeros gzip to ~128 KiB; inflating it whole is what the bound prevents.
    const bomb = gzipSync(Buffer.alloc(128 * 1024 * 1024), { level: 9 }).toString('base64');
    const lie = {
      backend: 'claude' as const,
      resumeId: 'abc',
      encoding: 'gzip+base64' as const,
      data: bomb,
      sha256: sha256(Buffer.from('tiny')),
      bytes: 4,
    };
    const before = process.memoryUsage().rss;
    const small = await restoreTranscript('claude', lie, p);
    expect(small).toMatchObject({ ok: false, error: { code: 'transcript_too_large' } });
    expect(small.ok ? '' : small.error.message).toMatch(/more than its declared 4 bytes/);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    const huge = await restoreTranscript('claude', { ...lie, bytes: MAX_TRANSCRIPT_BYTES + 1 }, p);
    expect(huge).toMatchObject({ ok: false, error: { code: 'transcript_too_large' } });
    expect(huge.ok ? '' : huge.error.message).toMatch(/declares \d+ bytes, over the/);
  });
});
