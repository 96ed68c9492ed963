// bench/runner: what the runner costs on top of the bare CLI, measured side by side in one run.
//   (1) start → CLI ready: `switchyard-runner serve` process start until the hub sees
//       status ready/running, vs the bare CLI's spawn until its own readiness answer
//       (pi: get_state response; claude: initialize control_response); and when the runner
//       spawned its CLI (bubblewrap, or the CLI itself without it), from its process start: the
//       runner's own part, without the CLI's start noise.
//   (2) user message → first text.delta: hub sends user_message until the hub holds the
//       first text.delta, vs writing the prompt to the bare CLI until its first delta line.
//   (3) the runner process's RSS after a turn, the median runner (the CLI is a separate process,
//       so it is excluded), beside an idle bare `node` started in the same run (Node's own floor),
//       and, for the bundle the image runs, again once it has sat idle after the turn (SETTLE_MS; a
//       runner spends most of a session waiting for the person's next message, so that is what a
//       session holds). The runner compacts its heap while its CLI starts and once a turn is stored
//       (runner/src/serve/heap-compaction.ts); `V8 compacts` is the bundle with that off
//       (SWITCHYARD_COMPACT_HEAP=0), leaving it to V8's memory reducer (4–8 s after it goes quiet),
//       split into anonymous and file-backed pages (/proc) and the V8 heap (process.memoryUsage(),
//       asked for with SIGUSR2 through runner/test/contract/process-report.mjs, which the runner preloads). The strip
//       cache is filled first, as the image fills it at build time.
//   (4) the CLI alone with the sandbox's walls added one at a time (guard, bubblewrap, the model
//       route: socat relaying into the CLI's network namespace), so the sandbox's share of (1) shows apart from the runner's.
// The runner is measured in eight ways (VARIANTS): with SWITCHYARD_SANDBOX=none (the runner's own
// cost); with the default sandbox (guard self-test, bubblewrap, model proxy), so each cost shows
// separately; launched as the edge launches a new session (SWITCHYARD_FRESH_SESSION=1: the CLI
// starts while the hub link comes up); and from the bundle (runner/scripts/build-bundle.ts), that
// without its own heap compaction, with an empty compile cache (a new task's /tmp is empty, and
// Node keeps that cache under TMPDIR; beside the bin under the same conditions), and, as the image
// runs it, with the compile cache the image fills at build time. The runs are
// interleaved (a bare start, then one of each runner variant, per round), and besides the ratio of
// medians the median of the per-round ratios is printed: on a machine whose load drifts, that
// pairs each start with the bare start measured next to it.
//   (5) the model route by itself (bubblewrap starting a command that exits at once, with and
//       without it) and what it holds in the sandbox.
//   (6) a streamed answer's first delta through the model route against straight to the model,
//       one client process each way (model-route.ts).
//   (7) a model call after a pause against an https provider, with and without the runner's
//       notice that a call is coming (upstream-connect.ts, its own process).
//   (8) a shell call and a read with and without the tool-call guard, the CLI alone
//       (tool-call.ts, its own process; not with --route).
// Same offline model, same spawn spec. Run: node bench/runner/run.ts [--runs N] [--route: (5) to (7) only]
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterFor, type Backend, type SpawnSpec } from '@switchyard/protocol';
import { locateCli } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { serveRunner, stopRunner, waitReady } from '../../runner/test/contract/fixture.ts';
import { processReport, reportingEnv, type ProcessReport } from '../../runner/test/contract/process-report.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';
import { buildBundle } from '../../runner/scripts/build-bundle.ts';
import { startModelRoute } from '../../runner/src/sandbox/model-proxy.ts';
import { makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { Sandbox } from '../../runner/src/sandbox/sandbox.ts';
import { lineWhere, spawnReady, writeSpecFiles } from '../cli-ready.ts';
import { median } from '../stats.ts';
import { routeStream } from './model-route.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 5;
/** `--route`: only (5) to (7), the model route by itself (quick, and runnable against another checkout's sandbox). */
const routeOnly = process.argv.includes('--route');
const ROUTE_RUNS = 21;
const now = () => performance.now();

function bareSpec(backend: Backend, model: OfflineModel, dir: string): SpawnSpec {
  return adapterFor(backend).spawnSpec({
    executable: locateCli(backend),
    workspace: join(dir, 'ws'),
    home: join(dir, 'home'),
    configDir: join(dir, 'cli'),
    modelBaseUrl: model.url,
    modelApiKey: 'bench',
    baseEnv: process.env,
  });
}

const isDelta = (line: string) => line.includes('"text_delta"');

/**
 * (4) Where a sandboxed CLI's start goes, without the runner: the CLI spawned directly, its walls
 * added one at a time as the runner's Sandbox adds them. For pi also the guard loaded as before
 * (jiti compiling it into a cache in the CLI's tmp dir, which bubblewrap makes new at every start).
 */
const LAYERS = [
  'bare CLI',
  'guard',
  'guard, bubblewrap',
  'guard, bubblewrap, model route',
  'pi before: jiti compiling',
] as const;
type Layer = (typeof LAYERS)[number];

async function layerReady(backend: Backend, model: OfflineModel, layer: Layer): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-bench-layer-'));
  const dirs = await makeCliDirs(dir);
  const bwrap = layer !== 'bare CLI' && layer !== 'guard';
  const sandbox = new Sandbox({ mode: bwrap ? 'bubblewrap' : 'none' });
  const route =
    layer === 'bare CLI' || layer === 'guard' || layer === 'guard, bubblewrap'
      ? undefined
      : await startModelRoute(sandbox.mode, model.url, undefined);
  let spec = adapterFor(backend).spawnSpec({
    executable: locateCli(backend),
    ...dirs,
    modelBaseUrl: route?.baseUrl ?? model.url,
    modelApiKey: route?.apiKey ?? 'bench',
    baseEnv: process.env,
    ...(layer !== 'bare CLI' && { guard: sandbox.guardOption(backend) }),
  });
  if (layer !== 'bare CLI') spec = await sandbox.prepare(spec, { backend, ...dirs, modelSocket: route?.socketPath });
  if (layer === 'pi before: jiti compiling') {
    const { JITI_TRY_NATIVE: _n, JITI_FS_CACHE: _c, NODE_OPTIONS: _o, ...env } = spec.env;
    spec = { ...spec, env };
  }
  writeSpecFiles(spec);
  const { child, ms } = await spawnReady(backend, spec);
  child.stdin?.end();
  await new Promise((r) => child.on('close', r));
  await route?.close();
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

/**
 * (5) The model route by itself: bubblewrap starting a command that exits at once, with and
 * without the route, interleaved, and the route's processes in the sandbox, from the sandbox's own
 * /proc (everything but bubblewrap's init and the reading shell). No CLI, so the route's share of
 * a start shows without a CLI's start noise around it.
 */
async function routeAlone(n: number): Promise<{ withoutMs: number; withMs: number; relay: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-bench-route-'));
  const dirs = await makeCliDirs(dir);
  const sandbox = new Sandbox({ mode: 'bubblewrap', guard: false });
  const route = await startModelRoute('bubblewrap', 'http://127.0.0.1:9', undefined);
  const spec = (script: string): SpawnSpec => ({
    command: '/bin/sh',
    args: ['-c', script],
    env: { PATH: '/usr/bin:/bin' },
    cwd: dirs.workspace,
    files: [],
  });
  const run = async (modelSocket: string | undefined, script = 'exit 0') => {
    const w = await sandbox.prepare(spec(script), { backend: 'claude', ...dirs, modelSocket });
    const t0 = now();
    const r = spawnSync(w.command, w.args, { cwd: w.cwd, env: w.env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`route bench: exit ${r.status}: ${r.stderr}`);
    return { ms: now() - t0, out: r.stdout };
  };
  const without: number[] = [];
  const withRoute: number[] = [];
  for (let i = 0; i < n; i++) {
    without.push((await run(undefined)).ms);
    withRoute.push((await run(route.socketPath)).ms);
  }
  const status = await run(route.socketPath, 'for f in /proc/[0-9]*/status; do cat "$f"; echo; done');
  const relay = status.out
    .split('\n\n')
    .map((block) => ({
      name: /^Name:\s+(\S+)/m.exec(block)?.[1],
      kb: Number(/^VmRSS:\s+(\d+)/m.exec(block)?.[1] ?? 0),
      pid: Number(/^Pid:\s+(\d+)/m.exec(block)?.[1] ?? 0),
    }))
    .filter((p) => p.name !== undefined && p.pid !== 1 && !['sh', 'cat'].includes(p.name))
    .map((p) => `${p.name} ${(p.kb / 1024).toFixed(1)} MiB`)
    .join(', ');
  await route.close();
  rmSync(dir, { recursive: true, force: true });
  return { withoutMs: median(without), withMs: median(withRoute), relay };
}

async function bare(
  backend: Backend,
  model: OfflineModel,
  n: number,
): Promise<{ readyMs: number[]; firstDeltaMs: number[]; cliRssKb: number }> {
  const readyMs: number[] = [];
  const firstDeltaMs: number[] = [];
  let cliRssKb = 0;
  for (let i = 0; i < n; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'sy-bench-'));
    const spec = bareSpec(backend, model, dir);
    writeSpecFiles(spec);
    const { child, codec, ms } = await spawnReady(backend, spec);
    readyMs.push(ms);
    const delta = lineWhere(child, isDelta);
    const t1 = now();
    child.stdin.write(codec.encodeUserMessage({ text: `bench ${i}` }));
    await delta;
    firstDeltaMs.push(now() - t1);
    cliRssKb = procMemory(child.pid ?? 0).rssKb;
    child.stdin.end();
    await new Promise((r) => child.on('close', r));
    rmSync(dir, { recursive: true, force: true });
  }
  return { readyMs, firstDeltaMs, cliRssKb };
}

interface RunnerMemory extends ProcMemory {
  heap: ProcessReport;
  /** With Variant.settle: RSS at the end of SETTLE_MS idle after the turn, and when it first got there. */
  settled?: { rssKb: number; afterMs: number };
}

const SETTLE_MS = 12_000;

/** Samples `pid`'s RSS while the runner sits idle for SETTLE_MS. */
async function settledMemory(pid: number): Promise<{ rssKb: number; afterMs: number }> {
  const samples: Array<{ at: number; rssKb: number }> = [];
  const t0 = now();
  while (now() - t0 < SETTLE_MS) {
    await new Promise((r) => setTimeout(r, 250));
    samples.push({ at: now() - t0, rssKb: procMemory(pid).rssKb });
  }
  const last = samples[samples.length - 1] as { at: number; rssKb: number };
  const reached = samples.find((x) => x.rssKb <= last.rssKb + 100) ?? last;
  return { rssKb: last.rssKb, afterMs: reached.at };
}

/** One way of starting the runner: its environment, its entry (the bin unless the bundle), its compile cache. */
interface Variant {
  name: string;
  env: Record<string, string>;
  entry?: string;
  /**
   * cold: a fresh TMPDIR per start, so Node's compile cache (kept under it) starts empty, as in a
   * new task's /tmp. image: that, and a fresh copy of the cache the image fills at build time
   * (IMAGE_CACHE), as the image's runner finds it (a copy: unlike the image's, it is writable).
   */
  compileCache?: 'cold' | 'image';
  /** Also measure RSS after SETTLE_MS idle (the bundle only: the wait is long). */
  settle?: boolean;
}

async function viaRunner(
  backend: Backend,
  model: OfflineModel,
  hub: TestHub,
  variant: Variant,
  n: number,
): Promise<{ readyMs: number[]; spawnedMs: number[]; firstDeltaMs: number[]; memory: RunnerMemory[] }> {
  const readyMs: number[] = [];
  const spawnedMs: number[] = [];
  const firstDeltaMs: number[] = [];
  const memory: RunnerMemory[] = [];
  const reportDir = mkdtempSync(join(tmpdir(), 'sy-bench-mem-'));
  for (let i = 0; i < n; i++) {
    const session = await hub.newSession();
    const report = join(reportDir, `${i}.json`);
    const tmp = variant.compileCache ? mkdtempSync(join(tmpdir(), 'sy-bench-tmp-')) : undefined;
    const imageCache = variant.compileCache === 'image' && tmp ? join(tmp, 'compile-cache') : undefined;
    if (imageCache) cpSync(IMAGE_CACHE, imageCache, { recursive: true });
    const t0 = now();
    const t0Wall = Date.now();
    const served = serveRunner(
      session,
      backend,
      model.url,
      {
        SWITCHYARD_LOG_LEVEL: 'warn',
        ...reportingEnv(report),
        ...(tmp ? { TMPDIR: tmp } : {}),
        ...(imageCache ? { SWITCHYARD_COMPILE_CACHE: imageCache } : {}),
        ...variant.env,
      },
      { entry: variant.entry },
    );
    await waitReady(session);
    readyMs.push(now() - t0);
    // Several turns on one runner: the first is the cold one, like the bare CLI's.
    const t1 = now();
    const { messageId } = await session.sendMessage(`bench ${i}`);
    await session.waitFor(
      () => session.events().some((e) => e.messageId === messageId && e.event.type === 'text.delta'),
      'first delta',
    );
    firstDeltaMs.push(now() - t1);
    await session.waitFor(
      () => session.events().some((e) => e.messageId === messageId && e.event.type === 'turn.done'),
      'turn.done',
    );
    const mem = procMemory(served.runner.pid);
    const heap = await processReport(served.runner.pid, report);
    // The CLI's spawn, as the runner's preload saw it (a /bin/sh is none of the CLI's).
    const cli = heap.spawns.find((s) => s.file !== '/bin/sh');
    if (cli) spawnedMs.push(cli.at - t0Wall);
    memory.push({ ...mem, heap, ...(variant.settle && { settled: await settledMemory(served.runner.pid) }) });
    await stopRunner(served.runner);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
  rmSync(reportDir, { recursive: true, force: true });
  return { readyMs, spawnedMs, firstDeltaMs, memory };
}

type Runs = Awaited<ReturnType<typeof viaRunner>>;

/** The median run by RSS; a runner that had to strip a module (one edited since the cache was filled) is counted, not hidden. */
function medianMemory(memory: RunnerMemory[]): RunnerMemory {
  const byRss = [...memory].sort((a, b) => a.rssKb - b.rssKb);
  return byRss[Math.floor(byRss.length / 2)] as RunnerMemory;
}

/** The median of the per-round ratios: each runner start against the bare start of its own round. */
const pairedRatio = (xs: number[], base: number[]) => median(xs.map((x, i) => x / (base[i] as number)));

interface ProcMemory {
  rssKb: number;
  anonKb: number;
  fileKb: number;
}

function procMemory(pid: number): ProcMemory {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { rssKb: kb('VmRSS'), anonKb: kb('RssAnon'), fileKb: kb('RssFile') };
  } catch {
    return { rssKb: 0, anonKb: 0, fileKb: 0 };
  }
}

/** Node's own floor, measured in this run: an idle `node` that has loaded nothing, settled. */
async function bareNode(): Promise<ProcMemory> {
  const child = spawn(
    process.execPath,
    ['-e', "setTimeout(() => console.log('settled'), 500); setInterval(() => {}, 1000)"],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  await lineWhere(child, (l) => l === 'settled');
  const mem = procMemory(child.pid ?? 0);
  child.kill();
  await new Promise((r) => child.on('close', r));
  return mem;
}

// Every runner module type-stripped ahead, as the image does at build time (runner/bin/strip-cache.js),
// and the bundle the image runs (runner/scripts/build-bundle.ts).
spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'runner', 'bin', 'fill-strip-cache.js')], {
  stdio: 'ignore',
});
const bundle = await buildBundle();
// The bundle's compile cache, filled as the image fills it at build time (runner/Dockerfile).
const IMAGE_CACHE = mkdtempSync(join(tmpdir(), 'sy-bench-image-cache-'));
const filled = spawnSync(
  process.execPath,
  [join(import.meta.dirname, '..', '..', 'runner', 'bin', 'fill-compile-cache.js')],
  {
    env: { ...process.env, SWITCHYARD_COMPILE_CACHE: IMAGE_CACHE },
    encoding: 'utf8',
  },
);
if (filled.status !== 0) throw new Error(`filling the compile cache failed: ${filled.stderr}`);
const fresh = { SWITCHYARD_FRESH_SESSION: '1' };
const VARIANTS: Variant[] = [
  { name: 'runner(none)', env: { SWITCHYARD_SANDBOX: 'none' } },
  { name: 'runner(default)', env: {} },
  { name: 'runner(default, fresh)', env: fresh },
  { name: 'bin, fresh, cold cache', env: fresh, compileCache: 'cold' },
  { name: 'bundle, fresh', env: fresh, entry: bundle, settle: true },
  { name: 'bundle, fresh, V8 compacts', env: { ...fresh, SWITCHYARD_COMPACT_HEAP: '0' }, entry: bundle, settle: true },
  { name: 'bundle, fresh, cold cache', env: fresh, entry: bundle, compileCache: 'cold' },
  { name: 'bundle, fresh, image cache', env: fresh, entry: bundle, compileCache: 'image' },
];
async function printRouteAlone(): Promise<void> {
  const r = await routeAlone(ROUTE_RUNS);
  console.log(
    `(5) the model route by itself: bubblewrap starting \`exit 0\`, median of ${ROUTE_RUNS} each, interleaved: without ${r.withoutMs.toFixed(1)} ms, with the route ${r.withMs.toFixed(1)} ms (+${(r.withMs - r.withoutMs).toFixed(1)} ms); in the sandbox beside the command: ${r.relay}`,
  );
  const st = await routeStream(ROUTE_RUNS + 1);
  console.log(
    `(6) a streamed answer's first text delta, median of ${ROUTE_RUNS} calls on one keep-alive connection: Node's http client ${st.route.http.toFixed(2)} ms through the model route, ${st.direct.http.toFixed(2)} ms straight to the model; fetch ${st.route.fetch.toFixed(2)} / ${st.direct.fetch.toFixed(2)} ms; Node's http client on a new connection each call (as after a pause) ${st.route['http-new'].toFixed(2)} / ${st.direct['http-new'].toFixed(2)} ms`,
  );
  console.log('(7) a model call after a pause:');
  const upstream = spawnSync(process.execPath, [join(import.meta.dirname, 'upstream-connect.ts')], {
    stdio: 'inherit',
  });
  if (upstream.status !== 0) throw new Error(`bench/runner/upstream-connect.ts exited ${upstream.status}`);
}
if (routeOnly) {
  await printRouteAlone();
  process.exit(0);
}

const model = await startOfflineModel();
const hub = await TestHub.start();
const node = await bareNode();
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
const mib = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
console.log(`bench/runner — medians of ${runs} runs each, offline model on loopback, one run side by side`);
console.log(
  'runner(none): SWITCHYARD_SANDBOX=none, the runner alone; runner(default): with the sandbox (guard self-test, bubblewrap, model proxy);',
);
console.log(
  'fresh: launched as the edge launches a new session; bundle: runner/dist, as the image runs it; cold cache: an empty compile cache, as in a new task; image cache: the one the image fills at build time (the image)',
);
console.log(
  `bare node (idle, nothing loaded): ${mib(node.rssKb)} RSS (anon ${mib(node.anonKb)}, file-backed ${mib(node.fileKb)})\n`,
);
for (const backend of ['pi', 'claude'] as const) {
  // Interleaved: one bare start and one of each runner variant per round, so the machine's load,
  // which drifts over a run, weighs on every column alike.
  const b = { readyMs: [] as number[], firstDeltaMs: [] as number[], cliRssKb: 0 };
  const results = VARIANTS.map((): Runs => ({ readyMs: [], spawnedMs: [], firstDeltaMs: [], memory: [] }));
  for (let i = 0; i < runs; i++) {
    const one = await bare(backend, model, 1);
    b.readyMs.push(...one.readyMs);
    b.firstDeltaMs.push(...one.firstDeltaMs);
    b.cliRssKb = one.cliRssKb;
    for (const [v, variant] of VARIANTS.entries()) {
      const r = await viaRunner(backend, model, hub, variant, 1);
      const into = results[v] as Runs;
      into.readyMs.push(...r.readyMs);
      into.spawnedMs.push(...r.spawnedMs);
      into.firstDeltaMs.push(...r.firstDeltaMs);
      into.memory.push(...r.memory);
    }
  }
  const bareReady = median(b.readyMs);
  const bareDelta = median(b.firstDeltaMs);
  console.log(
    `${backend}: bare CLI start → ready ${fmt(bareReady)}, message → first delta ${fmt(bareDelta)}, RSS ${mib(b.cliRssKb)}`,
  );
  console.log(
    '  variant                      | (1) start → ready: median, ratio, paired; CLI spawned | (2) first delta, ratio | (3) RSS (× bare node): anon + file; V8 heap used / total',
  );
  for (const [v, variant] of VARIANTS.entries()) {
    const r = results[v] as Runs;
    const m = medianMemory(r.memory);
    const stripper = r.memory.filter((x) => x.heap.stripper).length;
    const undici = r.memory.filter((x) => x.heap.undici).length;
    const settled = r.memory.flatMap((x) => (x.settled ? [x.settled] : []));
    const idleKb = median(settled.map((x) => x.rssKb));
    const settledNote = settled.length
      ? `; idle ${SETTLE_MS / 1000} s later ${mib(idleKb)} (${ratio(idleKb, node.rssKb)}, within 0.1 MiB of it after ${(median(settled.map((x) => x.afterMs)) / 1000).toFixed(1)} s)`
      : '';
    console.log(
      `  ${variant.name.padEnd(28)} | ${fmt(median(r.readyMs))} ${ratio(median(r.readyMs), bareReady)} ${pairedRatio(r.readyMs, b.readyMs).toFixed(2)}x; ${fmt(median(r.spawnedMs))} | ${fmt(median(r.firstDeltaMs))} ${ratio(median(r.firstDeltaMs), bareDelta)} | ${mib(m.rssKb)} (${ratio(m.rssKb, node.rssKb)}): ${mib(m.anonKb)} + ${mib(m.fileKb)}; ${mib(m.heap.heapUsed / 1024)} / ${mib(m.heap.heapTotal / 1024)}${settledNote}${stripper ? `; TypeScript stripper loaded in ${stripper} of ${runs}` : ''}${undici ? `; undici loaded in ${undici} of ${runs}` : ''}`,
    );
  }
  const of = (name: string) => results[VARIANTS.findIndex((v) => v.name === name)] as Runs;
  const [freshBin, coldBin, coldBundle, imageBundle] = [
    of('runner(default, fresh)'),
    of('bin, fresh, cold cache'),
    of('bundle, fresh, cold cache'),
    of('bundle, fresh, image cache'),
  ];
  console.log(
    `  paired, same rounds: bundle / bin with a cold cache ${pairedRatio(coldBundle.readyMs, coldBin.readyMs).toFixed(2)}x; bin cold / warm cache ${pairedRatio(coldBin.readyMs, freshBin.readyMs).toFixed(2)}x; bundle image / cold cache ${pairedRatio(imageBundle.readyMs, coldBundle.readyMs).toFixed(2)}x (CLI spawned ${fmt(median(imageBundle.spawnedMs))} / ${fmt(median(coldBundle.spawnedMs))})`,
  );
  const layers = LAYERS.filter((l) => backend === 'pi' || !l.startsWith('pi '));
  const layerMs = new Map<Layer, number[]>(layers.map((l) => [l, []]));
  for (let i = 0; i < runs; i++) for (const l of layers) layerMs.get(l)?.push(await layerReady(backend, model, l));
  const bareLayer = median(layerMs.get('bare CLI') ?? []);
  console.log('  (4) the CLI alone, spawned with its walls added one at a time: start → ready, median, ratio to bare');
  for (const [l, xs] of layerMs) console.log(`    ${l.padEnd(34)} ${fmt(median(xs))} ${ratio(median(xs), bareLayer)}`);
  console.log('');
}
await printRouteAlone();
console.log('(8) a shell call and a read, with and without the guard:');
const toolCall = spawnSync(process.execPath, [join(import.meta.dirname, 'tool-call.ts')], { stdio: 'inherit' });
if (toolCall.status !== 0) throw new Error(`bench/runner/tool-call.ts exited ${toolCall.status}`);
await hub.close();
await model.close();
rmSync(IMAGE_CACHE, { recursive: true, force: true });
