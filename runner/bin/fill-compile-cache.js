#!/usr/bin/env node
// Fills Node's compile cache for the bundled runner in SWITCHYARD_COMPILE_CACHE: the image runs
// this at build time, as the runner's uid, because a new task's /tmp is empty and /app is
// read-only when runners start (docs/DESIGN.md "Runner memory" → "A compile cache in the image").
// It is the runner itself that fills it: Node files the cache under the uid and V8's flags of the
// process that made it, and the bundle sets its flags before it enables the cache. `serve` with no
// configuration loads every module serve needs before its CLI's spawn, then refuses the
// configuration (exit 2); Node writes what it compiled as the process exits.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cacheDirFrom, requireEntries } from './compile-cache-dir.js';

const dir = cacheDirFrom('SWITCHYARD_COMPILE_CACHE', 'fill-compile-cache');
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
const count = requireEntries(dir, 'fill-compile-cache', 'serve');
process.stdout.write(`${count} modules' compiled code cached in ${dir}\n`);
