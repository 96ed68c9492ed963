// Edge benchmark: what a login (PBKDF2 + D1), an authenticated request and a session's own route
// (its D1 read started beside the token's) cost compared with a bare Hono route served by the same
// workerd. Starts `wrangler dev` on loopback with a throwaway
// D1, creates a user through the real operator scripts, then interleaves requests and prints
// medians and ratios. Standalone: `node bench/edge/run.ts` (or `npm run bench:edge`).
//
// Options: --samples N (default 300 per route; logins use N/3).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const ENV = {
  ...process.env,
  PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ''}`,
  WRANGLER_SEND_METRICS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
};
const PASSWORD = 'bench password, long enough';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 10) throw new Error(`--${name} must be an integer >= 10`);
  return v;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function npmScript(args: string[], stdin?: string): void {
  const res = spawnSync(process.execPath, args, {
    cwd: ROOT,
    env: ENV,
    input: stdin ?? '',
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  if (res.status !== 0) throw new Error(`${args.join(' ')} failed (${res.status})`);
}

async function waitReady(base: string, dev: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (dev.exitCode !== null) throw new Error(`wrangler dev exited with ${dev.exitCode}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('wrangler dev did not become ready in 60 s');
}

async function timed(req: () => Promise<Response>, expect: number): Promise<number> {
  const t0 = performance.now();
  const res = await req();
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== expect) throw new Error(`expected ${expect}, got ${res.status}`);
  return ms;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

async function main() {
  const samples = arg('samples', 300);
  const state = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-'));
  const [port, inspector] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  let dev: ChildProcess | undefined;
  try {
    npmScript(['scripts/db-migrate.ts', '--persist-to', state]);
    npmScript(['scripts/admin-create.ts', '--username', 'bench', '--role', 'user', '--persist-to', state], PASSWORD);
    dev = spawn(
      path.join(BIN, 'wrangler'),
      [
        'dev',
        'edge/bench/worker.ts',
        '--config',
        'wrangler.toml',
        '--persist-to',
        state,
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        '--inspector-port',
        String(inspector),
        '--show-interactive-dev-session=false',
        '--log-level',
        'warn',
      ],
      { cwd: ROOT, env: ENV, stdio: ['ignore', 'ignore', 'inherit'], detached: true },
    );
    await waitReady(base, dev);

    const json = { 'Content-Type': 'application/json' };
    const loginBody = JSON.stringify({ username: 'bench', password: PASSWORD });
    const login = () => fetch(`${base}/api/auth/login`, { method: 'POST', headers: json, body: loginBody });
    const first = await login();
    const { token } = (await first.json()) as { token: string };
    // The reference routes must reach the Worker (not the static assets' SPA fallback).
    const probe = await fetch(`${base}/api/__bench/pbkdf2`);
    if (!(probe.headers.get('content-type') ?? '').includes('application/json')) {
      throw new Error('/api/__bench/pbkdf2 was not answered by the bench Worker');
    }
    await probe.arrayBuffer();
    const auth = { Authorization: `Bearer ${token}` };
    const created = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { ...auth, ...json },
      body: JSON.stringify({ title: 'bench' }),
    });
    if (created.status !== 201) throw new Error(`creating a session: ${created.status}`);
    const { id: sessionId } = (await created.json()) as { id: string };
    const routes = {
      bare: { req: () => fetch(`${base}/api/__bench/bare`), status: 200, n: samples },
      healthz: { req: () => fetch(`${base}/healthz`), status: 200, n: samples },
      me: {
        req: () => fetch(`${base}/api/me`, { headers: auth }),
        status: 200,
        n: samples,
      },
      session: { req: () => fetch(`${base}/api/sessions/${sessionId}`, { headers: auth }), status: 200, n: samples },
      pbkdf2: { req: () => fetch(`${base}/api/__bench/pbkdf2`), status: 200, n: Math.ceil(samples / 3) },
      login: { req: login, status: 200, n: Math.ceil(samples / 3) },
    };
    type Name = keyof typeof routes;
    const names = Object.keys(routes) as Name[];
    const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Name, number[]>;
    // Warm-up, then round-robin so drift (JIT, GC, the machine) hits every route alike.
    for (const n of names) for (let i = 0; i < 10; i++) await timed(routes[n].req, routes[n].status);
    for (let round = 0; round < samples; round++) {
      for (const n of names) {
        if (times[n].length < routes[n].n) times[n].push(await timed(routes[n].req, routes[n].status));
      }
    }

    const med = (n: Name) => quantile(times[n], 0.5);
    const bare = med('bare');
    console.log(`edge bench: wrangler dev (workerd, local D1) on loopback; medians of interleaved samples`);
    console.log('route                       samples  median ms    p90 ms   x bare');
    const label: Record<Name, string> = {
      bare: 'GET /api/__bench/bare (bare)',
      healthz: 'GET /healthz (app, no auth)',
      me: 'GET /api/me (bearer auth)',
      session: 'GET /api/sessions/:id',
      pbkdf2: 'PBKDF2 verify only',
      login: 'POST /api/auth/login',
    };
    for (const n of names) {
      console.log(
        `${label[n].padEnd(28)}${String(times[n].length).padStart(7)}${med(n).toFixed(2).padStart(11)}${quantile(times[n], 0.9).toFixed(2).padStart(10)}${(med(n) / bare).toFixed(1).padStart(9)}`,
      );
    }
    console.log(`ratio login / bare route            ${(med('login') / bare).toFixed(1)}`);
    console.log(
      `ratio authenticated GET / bare      ${(med('me') / bare).toFixed(2)} (+${(med('me') - bare).toFixed(2)} ms per request for auth)`,
    );
    console.log(`ratio login / authenticated GET     ${(med('login') / med('me')).toFixed(1)}`);
    console.log(
      `a session over the authenticated GET ${(med('session') / med('me')).toFixed(2)} (+${(med('session') - med('me')).toFixed(2)} ms: its D1 read beside the token's, and the hub's live state)`,
    );
    console.log(
      `share of login spent in PBKDF2      ${((100 * (med('pbkdf2') - bare)) / (med('login') - bare)).toFixed(0)}%`,
    );
  } finally {
    // Only the process group this script started.
    if (dev?.pid !== undefined && dev.exitCode === null) process.kill(-dev.pid, 'SIGTERM');
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`bench/edge: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
