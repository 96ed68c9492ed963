// bench/runner: what the runner costs on top of the bare CLI, measured side by side in one run.
//   (1) start → CLI ready: `switchyard-runner serve` process start until the hub sees
//       status ready/running, vs the bare CLI's spawn until its own readiness answer
//       (pi: get_state response; claude: initialize control_response).
//   (2) user message → first text.delta: hub sends user_message until the hub holds the
//       first text.delta, vs writing the prompt to the bare CLI until its first delta line.
//   (3) the runner process's RSS after a turn, the median runner (the CLI is a separate process,
//       so it is excluded), beside an idle bare `node` started in the same run (Node's own floor),
//       split into anonymous and file-backed pages (/proc) and the V8 heap (process.memoryUsage(),
//       asked for with SIGUSR2 through memory-report.mjs, which the runner preloads). The strip
//       cache is filled first, as the image fills it at build time.
// The runner is measured three times: with SWITCHYARD_SANDBOX=none (the runner's own cost), with
// the default sandbox (guard self-test, bubblewrap, model proxy), so each cost shows separately,
// and with the default sandbox launched as the edge launches a new session
// (SWITCHYARD_FRESH_SESSION=1: the CLI starts while the hub link comes up). The runs are
// interleaved (a bare start, then one of each runner variant, per round), and besides the ratio of
// medians the median of the per-round ratios is printed: on a machine whose load drifts, that
// pairs each start with the bare start measured next to it.
// Same offline model, same spawn spec. Run: node bench/runner/run.ts [--runs N]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { adapterFor, type Backend, type SpawnSpec } from '@switchyard/protocol';
import { locateCli, readinessFor } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { serveRunner, stopRunner, waitReady } from '../../runner/test/contract/fixture.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';
import { until } from '../../test/helpers/poll.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const now = () => performance.now();

/** Resolves when `pred(line)` holds for a stdout line of `child`. */
function lineWhere(child: ReturnType<typeof spawn>, pred: (line: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      if (lines.some(pred)) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
  });
}

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
    mkdirSync(spec.cwd, { recursive: true });
    for (const f of spec.files) {
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(f.path, f.content);
    }
    const codec = adapterFor(backend).createCodec();
    const readiness = readinessFor(backend);
    const t0 = now();
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'ignore'] });
    const ready = lineWhere(
      child,
      (l) => readiness.isReady(l, undefined) || (backend === 'pi' && l.includes('"command":"get_state"')),
    );
    for (const line of [...codec.initLines(), ...readiness.lines]) child.stdin.write(line);
    await ready;
    readyMs.push(now() - t0);
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
  heap: { heapUsed: number; heapTotal: number; external: number; stripper: boolean };
}

async function viaRunner(
  backend: Backend,
  model: OfflineModel,
  hub: TestHub,
  env: Record<string, string>,
  n: number,
): Promise<{ readyMs: number[]; firstDeltaMs: number[]; memory: RunnerMemory[] }> {
  const readyMs: number[] = [];
  const firstDeltaMs: number[] = [];
  const memory: RunnerMemory[] = [];
  const reportDir = mkdtempSync(join(tmpdir(), 'sy-bench-mem-'));
  for (let i = 0; i < n; i++) {
    const session = await hub.newSession();
    const report = join(reportDir, `${i}.json`);
    const t0 = now();
    const served = serveRunner(session, backend, model.url, {
      SWITCHYARD_LOG_LEVEL: 'warn',
      NODE_OPTIONS: `--import ${MEMORY_REPORT}`,
      SWITCHYARD_BENCH_MEMORY_REPORT: report,
      ...env,
    });
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
    process.kill(served.runner.pid, 'SIGUSR2');
    memory.push({ ...mem, heap: await until('the runner memory report', () => readJson(report)) });
    await stopRunner(served.runner);
  }
  rmSync(reportDir, { recursive: true, force: true });
  return { readyMs, firstDeltaMs, memory };
}

type Runs = Awaited<ReturnType<typeof viaRunner>>;

/** The median run by RSS; a runner that had to strip a module (one edited since the cache was filled) is counted, not hidden. */
function medianMemory(memory: RunnerMemory[]): RunnerMemory {
  const byRss = [...memory].sort((a, b) => a.rssKb - b.rssKb);
  return byRss[Math.floor(byRss.length / 2)] as RunnerMemory;
}

/** The median of the per-round ratios: each runner start against the bare start of its own round. */
const pairedRatio = (xs: number[], base: number[]) => median(xs.map((x, i) => x / (base[i] as number)));

const MEMORY_REPORT = join(import.meta.dirname, 'memory-report.mjs');

function readJson(path: string): RunnerMemory['heap'] | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

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

// Every runner module type-stripped ahead, as the image does at build time (runner/bin/strip-cache.js).
spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'runner', 'bin', 'fill-strip-cache.js')], {
  stdio: 'ignore',
});
const model = await startOfflineModel();
const hub = await TestHub.start();
const node = await bareNode();
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
const mib = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
console.log(`bench/runner — medians of ${runs} runs each, offline model on loopback, one run side by side`);
console.log(
  'runner(none): SWITCHYARD_SANDBOX=none, the runner alone; runner(default): with the sandbox (guard self-test, bubblewrap, model proxy)',
);
console.log(
  `bare node (idle, nothing loaded): ${mib(node.rssKb)} RSS (anon ${mib(node.anonKb)}, file-backed ${mib(node.fileKb)})\n`,
);
for (const backend of ['pi', 'claude'] as const) {
  // Interleaved: one bare start and one of each runner variant per round, so the machine's load,
  // which drifts over a run, weighs on every column alike.
  const b = { readyMs: [] as number[], firstDeltaMs: [] as number[], cliRssKb: 0 };
  const empty = (): Runs => ({ readyMs: [], firstDeltaMs: [], memory: [] });
  const plain = empty();
  const full = empty();
  const fresh = empty();
  const add = (into: Runs, r: Runs) => {
    into.readyMs.push(...r.readyMs);
    into.firstDeltaMs.push(...r.firstDeltaMs);
    into.memory.push(...r.memory);
  };
  for (let i = 0; i < runs; i++) {
    const one = await bare(backend, model, 1);
    b.readyMs.push(...one.readyMs);
    b.firstDeltaMs.push(...one.firstDeltaMs);
    b.cliRssKb = one.cliRssKb;
    add(plain, await viaRunner(backend, model, hub, { SWITCHYARD_SANDBOX: 'none' }, 1));
    add(full, await viaRunner(backend, model, hub, {}, 1));
    add(fresh, await viaRunner(backend, model, hub, { SWITCHYARD_FRESH_SESSION: '1' }, 1));
  }
  const bareReady = median(b.readyMs);
  const bareDelta = median(b.firstDeltaMs);
  console.log(`${backend}`);
  console.log(
    `  (1) start → CLI ready       bare ${fmt(bareReady)} | runner(none) ${fmt(median(plain.readyMs))} ${ratio(median(plain.readyMs), bareReady)} | runner(default) ${fmt(median(full.readyMs))} ${ratio(median(full.readyMs), bareReady)} | runner(default, fresh) ${fmt(median(fresh.readyMs))} ${ratio(median(fresh.readyMs), bareReady)}`,
  );
  console.log(
    `      paired (median of per-round ratios): runner(none) ${pairedRatio(plain.readyMs, b.readyMs).toFixed(2)}x | runner(default) ${pairedRatio(full.readyMs, b.readyMs).toFixed(2)}x | runner(default, fresh) ${pairedRatio(fresh.readyMs, b.readyMs).toFixed(2)}x; fresh / default ${pairedRatio(fresh.readyMs, full.readyMs).toFixed(2)}x`,
  );
  console.log(
    `  (2) message → first delta   bare ${fmt(bareDelta)} | runner(none) ${fmt(median(plain.firstDeltaMs))} ${ratio(median(plain.firstDeltaMs), bareDelta)} | runner(default) ${fmt(median(full.firstDeltaMs))} ${ratio(median(full.firstDeltaMs), bareDelta)}`,
  );
  const m = medianMemory(full.memory);
  const stripperLoaded = [...plain.memory, ...full.memory, ...fresh.memory].filter((x) => x.heap.stripper).length;
  console.log(
    `  (3) runner RSS, CLI excluded: none ${mib(medianMemory(plain.memory).rssKb)}, default ${mib(m.rssKb)} (${ratio(m.rssKb, node.rssKb)} bare node; the CLI itself ${mib(b.cliRssKb)}, ratio ${ratio(m.rssKb, b.cliRssKb)})`,
  );
  console.log(
    `      default: anon ${mib(m.anonKb)} + file-backed ${mib(m.fileKb)}; V8 heap used ${mib(m.heap.heapUsed / 1024)} of ${mib(m.heap.heapTotal / 1024)}, external ${mib(m.heap.external / 1024)}; TypeScript stripper loaded in ${stripperLoaded} of ${3 * runs} runners`,
  );
}
await hub.close();
await model.close();
