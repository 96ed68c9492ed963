import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { RUNNER_BIN } from './contract/runner-process.ts';

// The runner's strip cache (runner/bin/strip-cache.js): modules served type-stripped from disk so
// a runner does not load amaro, never stale after an edit, and harmless when it cannot be written.
// Real node processes; whether amaro was loaded is read from the process's own module list.

const STRIP_CACHE = join(RUNNER_BIN, '..', 'strip-cache.js');
const AMARO_REPORT = `process.on('exit', () => process.stderr.write('amaro=' + process.moduleLoadList.some((m) => m.includes('amaro')) + '\\n'));`;

const moduleSource = (n: number) => `interface Shape {
  n: number;
}
const shape: Shape = { n: ${n} };
export const value: number = shape.n + 1;
export function fail(): never {
  throw new Error('here');
}
`;

/** A project dir with mod.ts and an entry that loads it, through the cache in `cacheDir` unless null. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-strip-'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(
    join(dir, 'main.mjs'),
    `import { registerStripCache } from ${JSON.stringify(STRIP_CACHE)};
if (process.argv[2] !== 'none') registerStripCache(process.argv[2]);
const m = await import('./mod.ts');
let at;
try { m.fail(); } catch (e) { at = /mod\\.ts:(\\d+:\\d+)/.exec(e.stack)?.[1]; }
console.log(JSON.stringify({ value: m.value, at, amaro: process.moduleLoadList.some((x) => x.includes('amaro')) }));
`,
  );
  return dir;
}

function run(dir: string, cacheDir: string): { value: number; at: string; amaro: boolean } {
  const r = spawnSync(process.execPath, [join(dir, 'main.mjs'), cacheDir], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

describe('strip cache', () => {
  test('a miss strips and stores, a hit loads no amaro, an edited file is never served stale', () => {
    const dir = project();
    const cache = mkdtempSync(join(tmpdir(), 'sy-strip-cache-'));
    writeFileSync(join(dir, 'mod.ts'), moduleSource(41));
    // What Node's own stripping gives, including where the error points.
    const own = run(dir, 'none');
    expect(own).toEqual({ value: 42, at: '7:9', amaro: true });

    expect(run(dir, cache)).toEqual(own);
    expect(readdirSync(cache)).toHaveLength(1);
    expect(run(dir, cache)).toEqual({ ...own, amaro: false });

    writeFileSync(join(dir, 'mod.ts'), moduleSource(99));
    expect(run(dir, cache)).toEqual({ value: 100, at: '7:9', amaro: true });
    expect(run(dir, cache)).toEqual({ value: 100, at: '7:9', amaro: false });
    expect(readdirSync(cache)).toHaveLength(2);
  });

  test('a cache that cannot be written (read-only image, wrong path) only costs the stripping', () => {
    const dir = project();
    writeFileSync(join(dir, 'mod.ts'), moduleSource(1));
    const notADir = join(dir, 'package.json', 'cache');
    expect(run(dir, notADir)).toEqual({ value: 2, at: '7:9', amaro: true });
    expect(run(dir, notADir)).toEqual({ value: 2, at: '7:9', amaro: true });
  });

  test('the runner bin, once its modules are cached, starts without amaro', () => {
    const bin = (): string => {
      const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${AMARO_REPORT}`, RUNNER_BIN, 'help'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
      expect(r.status).toBe(0);
      expect(r.stdout).toContain('usage:');
      return r.stderr;
    };
    bin();
    expect(bin()).toBe('amaro=false\n');
  });
});
