// The agent can rename anything in its workspace while the runner saves or restores it. A loop in
// its shell swapping a folder for a link and back wins a check-then-open race within a few hundred
// tries, so these run the attack itself: a real process swapping the folder as fast as it can,
// against the runner's save (read), restore (write) and delete, many times over.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readInside } from '../src/workspace/scan.ts';
import { removeInside, writeInside } from '../src/workspace/write.ts';

const ATTEMPTS = 3000;
/** Tries at least ATTEMPTS times and on, up to ten times that, until the race was met at least once. */
const more = (i: number, met: number) => i < ATTEMPTS || (met === 0 && i < 10 * ATTEMPTS);
const dirs: string[] = [];
const swappers: ChildProcess[] = [];
afterEach(() => {
  for (const s of swappers.splice(0)) s.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `sy-race-${name}-`));
  dirs.push(d);
  return d;
};

/**
 * The agent's loop: `root/d` a real folder, then a link to `target`, then the folder again,
 * forever. A restore may make `d` anew while it is away: that folder is removed and the loop goes on.
 */
async function swapFolder(root: string, target: string): Promise<void> {
  const script = `
    const fs = require('node:fs'); const p = require('node:path'); const r = ${JSON.stringify(root)};
    const d = p.join(r, 'd'), away = p.join(r, 'd-away');
    const drop = () => fs.rmSync(d, { recursive: true, force: true });
    process.stdout.write('swapping\\n');
    for (;;) {
      try { fs.renameSync(d, away); } catch { try { drop(); fs.renameSync(away, d); } catch {} continue; }
      try { fs.symlinkSync(${JSON.stringify(target)}, d); } catch {}
      try { fs.unlinkSync(d); } catch { try { drop(); } catch {} }
      try { fs.renameSync(away, d); } catch {}
    }`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  swappers.push(child);
  await new Promise((resolve) => child.stdout?.once('data', resolve));
}

describe('the workspace against a folder swapped for a link while the runner works in it', () => {
  it("a save reads the workspace's file or nothing, never the runner's own /proc/self/environ", async () => {
    const root = tempDir('save');
    mkdirSync(join(root, 'd'));
    writeFileSync(join(root, 'd', 'environ'), 'the workspace file\n');
    await swapFolder(root, '/proc/self');
    const read: Record<string, number> = {};
    for (let i = 0; more(i, read.refused ?? 0); i++) {
      const outcome = await readInside(root, 'd/environ', 1 << 20).then(
        (data) => (data.toString() === 'the workspace file\n' ? 'the workspace file' : 'SOMETHING ELSE'),
        () => 'refused',
      );
      read[outcome] = (read[outcome] ?? 0) + 1;
    }
    expect(read['SOMETHING ELSE']).toBeUndefined();
    // The race was run: some reads met the link.
    expect(read.refused).toBeGreaterThan(0);
  });

  it('a restore writes into the workspace or refuses, never through the link', async () => {
    const root = tempDir('restore');
    const outside = tempDir('restore-outside');
    mkdirSync(join(root, 'd'));
    await swapFolder(root, outside);
    let refused = 0;
    for (let i = 0; more(i, refused) && readdirSync(outside).length === 0; i++)
      await writeInside(root, 'd/planted.txt', Buffer.from('from the durable copy'), {
        executable: false,
        modifiedAt: Date.now(),
      }).catch(() => (refused += 1));
    expect(readdirSync(outside)).toEqual([]);
    expect(refused).toBeGreaterThan(0);
  });

  it('a delete removes the workspace file or nothing, never the file the link leads to', async () => {
    const root = tempDir('delete');
    const outside = tempDir('delete-outside');
    mkdirSync(join(root, 'd'));
    writeFileSync(join(outside, 'victim'), 'outside');
    await swapFolder(root, outside);
    // The workspace's own d/victim is gone already; the durable copy's delete comes again and again.
    // Its window is the narrowest (no write between the look and the unlink): more tries.
    for (let i = 0; i < 10 * ATTEMPTS && existsSync(join(outside, 'victim')); i++)
      await removeInside(root, 'd/victim').catch(() => undefined);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('outside');
  });
});

describe('a file that grows after its size was looked at', () => {
  // /proc/self/status says it holds 0 bytes and reads as a kilobyte or more: what a file the agent
  // keeps appending to looks like between the runner's stat and its read, every time.
  it('a save refuses it past the bound instead of reading it to its end', async () => {
    await expect(readInside('/proc/self', 'status', 64)).rejects.toThrow('status grew past 64 bytes while it was read');
    const whole = await readInside('/proc/self', 'status', 1024 * 1024);
    expect(whole.toString('utf8')).toMatch(/^Name:/);
  });
});
