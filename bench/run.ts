// `npm run bench`: runs every bench/<name>/run.ts in turn (or the names given). Arguments after
// the names are passed on to each bench named: `npm run bench -- pool --runs 5 --backends pi`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = import.meta.dirname;
const all = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'run.ts')))
  .map((d) => d.name)
  .sort();
const argv = process.argv.slice(2);
// The leading words that name benches select them; the first word that does not starts the bench's own arguments.
const split = argv.findIndex((a) => !all.includes(a));
const wanted = split === -1 ? argv : argv.slice(0, split);
const passOn = split === -1 ? [] : argv.slice(split);
if (passOn.length > 0 && wanted.length === 0) {
  console.error(`name the bench the arguments are for (one of ${all.join(', ')}), e.g. npm run bench -- pool --runs 5`);
  process.exit(2);
}
const names = all.filter((n) => wanted.length === 0 || wanted.includes(n));

let failed = 0;
for (const name of names) {
  console.log(`\n### bench/${name}`);
  const r = spawnSync(process.execPath, [join(root, name, 'run.ts'), ...passOn], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
