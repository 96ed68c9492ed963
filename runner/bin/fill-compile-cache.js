#!/usr/bin/env node
// Fills Node's compile cache for the bundled runner in SWITCHYARD_COMPILE_CACHE: the image runs
// this at build time, as the runner's uid, because a new task's /tmp is empty and /app is
// read-only when runners start (docs/DESIGN.md "Runner memory" → "A compile cache in the image").
// It is the runner itself that fills it: Node files the cache under the uid and V8's flags of the
// process that made it, and the bundle sets its flags before it enables the cache. `serve` with no
// configuration loads every module serve needs before its CLI's spawn, then refuses the
// configuration (exit 2); Node writes what it compiled as the process exits.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = process.env.SWITCHYARD_COMPILE_CACHE;
if (!dir) {
  process.stderr.write('fill-compile-cache: set SWITCHYARD_COMPILE_CACHE to the cache directory\n');
  process.exit(2);
}
const bundle = fileURLToPath(new URL('../dist/switchyard-runner.mjs', import.meta.url));
const run = spawnSync(process.execPath, [bundle, 'serve'], {
  env: { PATH: process.env.PATH, SWITCHYARD_COMPILE_CACHE: dir },
  encoding: 'utf8',
});
if (run.status !== 2 || !run.stderr.includes('"invalid configuration"')) {
  process.stderr.write(`fill-compile-cache: expected serve to refuse an empty configuration, got exit ${run.status}\n`);
  process.stderr.write(run.stderr);
  process.exit(1);
}
const entries = readdirSync(dir, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) => readdirSync(join(dir, d.name)).map((f) => join(d.name, f)));
if (entries.length === 0) {
  process.stderr.write(`fill-compile-cache: serve wrote no compile cache into ${dir}\n`);
  process.exit(1);
}
process.stdout.write(`${entries.length} modules' compiled code cached in ${dir}\n`);
