// Web app benchmark, in Debian Chromium: (1) the initial JavaScript of the chat page, gzipped
// (budget 150 KB); (2) time from an SSE delta's bytes reaching the page's stream to the frame
// that painted it, median and p99, at 1 and at 20 deltas per frame (a 2,000-delta answer), for
// the real chat path and for a baseline in the same page (the same bytes appended to one <pre>,
// no framework, no Markdown); (3) the time to render a 500-turn history replayed at once.
// Standalone: `node bench/web/run.ts`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../../test/helpers/browser.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const VITE = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
const BUDGET_GZIP_BYTES = 150 * 1024;

function build(args: string[], env: NodeJS.ProcessEnv = {}): void {
  const r = spawnSync(process.execPath, [VITE, 'build', '--logLevel', 'warn', ...args], {
    cwd: path.join(ROOT, 'web'),
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`vite build failed:\n${r.stderr}${r.stdout}`);
}

/** Every script index.html loads before the app runs (entry + module preloads), gzipped. */
function initialJs(dist: string): { files: string[]; raw: number; gzip: number } {
  const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
  const files = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+\.js)"/g)].map(
    (m) => m[1]!,
  );
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const bytes = readFileSync(path.join(dist, f));
    raw += bytes.byteLength;
    gzip += gzipSync(bytes, { level: 9 }).byteLength;
  }
  return { files, raw, gzip };
}

function serve(dir: string): Promise<{ url: string; close: () => void }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
  const server = createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    const file = path.join(dir, p === '/' ? 'harness.html' : p);
    if (!file.startsWith(dir)) return void res.writeHead(403).end();
    try {
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      resolve({
        url: `http://127.0.0.1:${typeof a === 'object' && a !== null ? a.port : 0}`,
        close: () => server.close(),
      });
    }),
  );
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

type Bench = {
  streamAnswer(perFrame: number, frames: number): Promise<number[]>;
  history(turns: number): Promise<number>;
};

async function run(page: Page, url: string, mode: 'chat' | 'raw', perFrame: number, frames: number): Promise<number[]> {
  await page.goto(`${url}/?mode=${mode}`);
  await page.waitForFunction(() => 'bench' in window);
  return page.evaluate(([p, f]) => (window as unknown as { bench: Bench }).bench.streamAnswer(p, f), [
    perFrame,
    frames,
  ] as const);
}

async function main(): Promise<void> {
  build([]);
  const app = initialJs(path.join(ROOT, 'web', 'dist'));
  console.log(
    `initial JS of the chat page: ${(app.gzip / 1024).toFixed(1)} KB gzip (${(app.raw / 1024).toFixed(1)} KB raw) in ${app.files.join(', ')}; budget ${BUDGET_GZIP_BYTES / 1024} KB -> ${app.gzip <= BUDGET_GZIP_BYTES ? 'within' : 'OVER'}`,
  );

  const out = mkdtempSync(path.join(tmpdir(), 'switchyard-web-bench-'));
  const browser = await launchBrowser();
  try {
    build(['--config', 'bench/vite.config.ts'], { HARNESS_OUT: out });
    const server = await serve(out);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    console.log('\ndelta -> painted (median / p99), chat path vs baseline (<pre> append) in the same page:');
    for (const [perFrame, frames] of [
      [1, 300],
      [20, 100],
    ] as const) {
      const base = await run(page, server.url, 'raw', perFrame, frames);
      const chat = await run(page, server.url, 'chat', perFrame, frames);
      const [bm, bp, cm, cp] = [pct(base, 50), pct(base, 99), pct(chat, 50), pct(chat, 99)];
      console.log(
        `  ${String(perFrame).padStart(2)} delta(s)/frame, ${chat.length} deltas: chat ${ms(cm)} / ${ms(cp)}; baseline ${ms(bm)} / ${ms(bp)}; ratio ${(cm / bm).toFixed(2)}x median, ${(cp / bp).toFixed(2)}x p99`,
      );
    }
    await page.goto(`${server.url}/?mode=chat`);
    await page.waitForFunction(() => 'bench' in window);
    const historyMs = await page.evaluate(() => (window as unknown as { bench: Bench }).bench.history(500));
    await page.goto(`${server.url}/?mode=raw`);
    await page.waitForFunction(() => 'bench' in window);
    const rawHistoryMs = await page.evaluate(() => (window as unknown as { bench: Bench }).bench.history(500));
    console.log(
      `\n500-turn history replayed at once -> painted: chat ${ms(historyMs)}; baseline ${ms(rawHistoryMs)}; ratio ${(historyMs / rawHistoryMs).toFixed(1)}x`,
    );
    server.close();
  } finally {
    await browser.close();
    rmSync(out, { recursive: true, force: true });
  }
  if (app.gzip > BUDGET_GZIP_BYTES) process.exitCode = 1;
}

await main();
