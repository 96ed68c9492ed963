// `npm run bench`: runs every bench/<name>/run.ts in turn (or the names given).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = import.meta.dirname;
const wanted = process.argv.slice(2);
const names = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'run.ts')))
  .map((d) => d.name)
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

let failed = 0;
for (const name of names) {
  console.log(`\n### bench/${name}`);
  const r = spawnSync(process.execPath, [join(root, name, 'run.ts')], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
