// What the two compile-cache fills (fill-compile-cache.js for the runner, fill-cli-compile-cache.js
// for pi) share: the directory they fill, named by an environment variable, and the check that the
// process they ran wrote entries into it (Node files them under <dir>/<version, flags and uid>/).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The directory `name` names; exits 2, saying so, when it is unset. */
export function cacheDirFrom(name, script) {
  const dir = process.env[name];
  if (!dir) {
    process.stderr.write(`${script}: set ${name} to the cache directory\n`);
    process.exit(2);
  }
  return dir;
}

/** How many entries Node wrote into `dir`; exits 1, naming `writer`, when it wrote none. */
export function requireEntries(dir, script, writer) {
  const entries = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => readdirSync(join(dir, d.name)));
  if (entries.length === 0) {
    process.stderr.write(`${script}: ${writer} wrote no compile cache into ${dir}\n`);
    process.exit(1);
  }
  return entries.length;
}
