// CI check of the production Worker (npm run worker:check):
//   1. the generated binding types (edge/worker-configuration.d.ts) match wrangler.toml;
//   2. the web app is built (the Worker's static assets, web/dist);
//   3. `wrangler deploy --dry-run --env production` bundles the Worker as it would deploy it;
//      the bundle size is reported and the check fails near the Workers size limit.
// Offline: a dry run talks to no Cloudflare API.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('..', import.meta.url));
// The Workers limit is on the compressed upload: 3 MiB on the Free plan, 10 MiB on Paid.
// Default to Free so a deploy works on either; raise it for a Paid-only deployment.
const limitKiB = Number(process.env.WORKER_SIZE_LIMIT_KIB ?? 3072);
// Fail this close to the limit: the next dependency bump should not be the one that breaks deploys.
const FAIL_AT = 0.9;

const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' };

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd: root, env, encoding: 'utf8' });
  const out = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) {
    process.stderr.write(out);
    console.error(`worker:check: \`${cmd} ${args.join(' ')}\` failed (exit ${r.status})`);
    process.exit(1);
  }
  return out;
}

// The same flags edge:types generates with (wrangler compares a hash of them): vars stay
// `string`, because the values in wrangler.toml are placeholders an operator replaces.
run('npx', ['wrangler', 'types', 'edge/worker-configuration.d.ts', '--strict-vars=false', '--check']);
console.log('worker:check: edge/worker-configuration.d.ts is up to date with wrangler.toml');

run('npm', ['run', '--silent', 'build:web']);

const outdir = mkdtempSync(join(tmpdir(), 'sy-worker-'));
try {
  const out = run('npx', ['wrangler', 'deploy', '--dry-run', '--env', 'production', '--outdir', outdir]);
  const reported = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
  if (!reported) {
    process.stderr.write(out);
    console.error('worker:check: wrangler printed no upload size');
    process.exit(1);
  }
  // Our own measure of the same modules (source maps and the README are not uploaded).
  const modules = readdirSync(outdir).filter((f) => !f.endsWith('.map') && f !== 'README.md');
  const bytes = modules.map((f) => readFileSync(join(outdir, f)));
  const rawKiB = bytes.reduce((n, b) => n + b.length, 0) / 1024;
  const gzipKiB = bytes.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0) / 1024;
  const wranglerGzipKiB = Number(reported[2]);
  const sizeKiB = Math.max(gzipKiB, wranglerGzipKiB);
  const share = sizeKiB / limitKiB;
  console.log(
    `worker:check: production bundle ${modules.join(', ')}: ${rawKiB.toFixed(1)} KiB, gzip ${gzipKiB.toFixed(1)} KiB ` +
      `(wrangler: ${reported[1]} KiB / gzip ${reported[2]} KiB) = ${(share * 100).toFixed(1)}% of the ${limitKiB} KiB limit`,
  );
  if (share >= FAIL_AT) {
    console.error(
      `worker:check: FAIL: the compressed Worker is at ${(share * 100).toFixed(1)}% of the ${limitKiB} KiB Workers size limit (fails at ${FAIL_AT * 100}%)`,
    );
    process.exit(1);
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
