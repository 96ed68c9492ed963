// bench/workspace/read-bound.ts: what bounding a read costs a save. The runner reads each file of
// a save with `readInside` (runner/src/workspace/scan.ts), which now stops one byte past the size
// bound (`readAtMost`) where it used to call `FileHandle.readFile`, which reads to the end. Both
// read the same files in interleaved rounds, each through a handle opened the same way: 5,000
// files of 1 KB, and one of 50 MB. Medians of the rounds; the ratio is against `readFile`.
// Run: node bench/workspace/read-bound.ts [--rounds N]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readAtMost } from '../../runner/src/workspace/beneath.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' } } });
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), 'sy-read-bound-'));
const small = Array.from({ length: 5000 }, (_, i) => join(dir, `f${i}`));
for (const f of small) writeFileSync(f, Buffer.alloc(1024, 7));
const large = join(dir, 'large');
writeFileSync(large, Buffer.alloc(50 * 1024 * 1024, 7));
const MAX = 64 * 1024 * 1024;

type Reader = (path: string) => Promise<number>;
// Both look at the size first, as readInside does before either.
const viaReadFile: Reader = async (path) => {
  const fh = await open(path, 'r');
  try {
    if ((await fh.stat()).size > MAX) return -1;
    return (await fh.readFile()).length;
  } finally {
    await fh.close();
  }
};
const viaReadAtMost: Reader = async (path) => {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size > MAX) return -1;
    return (await readAtMost(fh, MAX, size))?.length ?? -1;
  } finally {
    await fh.close();
  }
};

async function time(read: Reader, files: readonly string[]): Promise<number> {
  const t = performance.now();
  let bytes = 0;
  for (const f of files) bytes += await read(f);
  if (bytes <= 0) throw new Error('nothing read');
  return performance.now() - t;
}

for (const [name, files] of [
  ['5,000 files of 1 KB', small],
  ['one file of 50 MB', [large]],
] as const) {
  const base: number[] = [];
  const bounded: number[] = [];
  await time(viaReadFile, files);
  await time(viaReadAtMost, files);
  for (let r = 0; r < rounds; r++) {
    base.push(await time(viaReadFile, files));
    bounded.push(await time(viaReadAtMost, files));
  }
  const [b, m] = [median(base), median(bounded)];
  console.log(
    `${name.padEnd(22)} readFile ${b.toFixed(1).padStart(7)} ms | readAtMost ${m.toFixed(1).padStart(7)} ms | ${(m / b).toFixed(2)}×`,
  );
}
rmSync(dir, { recursive: true, force: true });
