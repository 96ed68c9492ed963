// bench/e2e: the whole path (SSE client → edge Worker → SessionHub → runner → CLI → model and
// back) against the bare CLI, in one run on one machine, through HTTP only.
//   (1) first text.delta: POST /messages until an SSE client holds the turn's first text.delta,
//       vs writing the prompt to the bare CLI (spawned as test/helpers/cli-harness.ts does) until
//       its codec yields the first text.delta. Warm: the 2nd+ message of a session / of the bare
//       CLI. Both talk to the same model (offline model behind the stamp proxy). Ratio of medians.
//       Beside them the platform's floor (floor.ts): the same hops with no app code, so the ratio
//       no path through this platform gets under, and what the app adds over bare CLI + floor.
//   (2) delivery latency for 1, 50 and 500 SSE viewers of one session while it streams a slow
//       answer (N deltas, fixed pacing). The stamp proxy (stamp-proxy.ts) rewrites each streamed
//       text delta to the wall-clock time it left for the CLI; latency = a viewer's receipt time
//       − that stamp, i.e. model → CLI → runner → hub → Worker → SSE → client, all on loopback,
//       all viewers in this one Node process (so their own parsing is included). p50/p99 over
//       every (viewer, delta) pair; ratios to 1 viewer. `--fanout-deltas` per turn (default 1000, so
//       even one viewer's p99 is read off 1,000 deliveries rather than its second-slowest of 100),
//       fewer where that would pass 50,000 deliveries (but never under `--deltas`): 500 viewers
//       saturate this machine's workerd, and a longer turn only grows the backlog (1,000 deltas to
//       500 viewers: a 131 s turn, p99 120 s, workerd at 4.9 GB).
//       Split at the Worker's SSE write (its hop stamp, below): model → Worker SSE write is the
//       server's part (CLI, runner, hub, the Worker's relay), the rest is wrangler dev's proxy and
//       this client's own parsing, which share the machine's two cores with the server.
//   (3) memory from /proc: RSS of each session's runner process and of everything in its process
//       groups (runner + CLI), and workerd's RSS growth per live session (K sessions, one turn each).
//   (4) per hop, claude and pi: where a streamed delta's time goes. The runner runs with
//       SWITCHYARD_BENCH_HOPS=1 and the hub with BENCH_HOPS=1 (protocol's bench-hops.ts), so each
//       delta reaches the SSE client with the runner's, hub's and Worker's wall-clock stamps in an
//       SSE comment; with the proxy's stamp and the client's receipt, median and p99 of every hop
//       over one paced answer (1 viewer). (1) also splits each first delta into the way to the
//       model (POST → the proxy's stamp) and back (stamp → SSE client), beside the bare CLI's; the
//       way in from the Worker's and hub's stamps in the POST's 202 (protocol's MessageHops). Once
//       more without wrangler dev's proxy (a second workerd in front of the Worker, which a
//       deployed edge does not have): the client and the runner's link straight to Miniflare.
//   (2) and (5) also follow each workerd process's RSS: before the viewers open, connected, after
//       the turn, and once settled after they closed; (5) opens and closes the largest viewer
//       count 3 times on an idle session, to tell memory kept for reuse from memory that grows.
// The edge's state is on tmpfs where the machine has one (bench/edge-state.ts);
// `--edge-state-on-disk` puts it under the temp dir instead, to show what workerd's fsyncs cost.
// Run: npm run bench -- e2e   (or node bench/e2e/run.ts [--runs N] [--viewers 1,50,500] [--fanout-deltas N] [--edge-state-on-disk])
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { throwawayEdgeState } from '../edge-state.ts';
import { type Floor, startFloor } from './floor.ts';
import { OFFLINE_MODEL_BIN, spawnUrlProcess } from '../url-process.ts';
import { hopComments, HOPS_ON, messageHops, PartTimes, proxyStamps } from '../hops.ts';
import { liveInGroups, listProcs } from '@switchyard/runner/host';
import { startStack, type Stack } from '../../scripts/start.ts';
import { startCli } from '../../test/helpers/cli-harness.ts';
import { Api, type SseStream } from '../../test/helpers/sse-client.ts';
import { comm, cpuMs, rssKb } from '../procfs.ts';
import { median, quantile } from '../stats.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
};
const RUNS = Number(arg('--runs', '5'));
const VIEWERS = arg('--viewers', '1,50,500').split(',').map(Number);
const SESSIONS = Number(arg('--sessions', '3'));
const DELTAS = Number(arg('--deltas', '100'));
const PACE_MS = Number(arg('--pace', '30'));
const FANOUT_DELTAS = Number(arg('--fanout-deltas', '1000'));
/** Deltas of the fan-out turn to `n` viewers (see (2) above). */
const fanoutDeltas = (n: number) => Math.max(DELTAS, Math.min(FANOUT_DELTAS, Math.floor(50_000 / n)));
const TURN_MS = 180_000;

const now = () => performance.now();
const wall = (t: number) => performance.timeOrigin + t;
const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);
const mib = (kb: number) => (kb / 1024).toFixed(1);
const modelStamp = (text: unknown): number => proxyStamps(text).sent;

/** The hops, in path order: each is the time from the previous stamp to this one. */
const HOPS = [
  ['read', 'model → CLI stdout read by the runner'],
  ['codec', 'codec (JSONL split + parse)'],
  ['buffer', 'turn machine + event check + into the buffer'],
  ['sent', 'buffer → link send (same-tick batching)'],
  ['hubIn', 'link → hub received'],
  ['hubStored', 'hub durable write (SQLite)'],
  ['hubSent', 'hub broadcast'],
  ['sse', 'hub → Worker SSE write (output gate, viewer socket)'],
  ['client', 'Worker → SSE client receipt'],
] as const;
type HopName = (typeof HOPS)[number][0];
type Stamps = Record<HopName | 'model', number>;

/** A first delta's parts in path order, medians: `name ms | …`. */
const describe = (t: PartTimes): string =>
  t
    .medians()
    .map(([name, ms]) => `${name} ${f1(ms)}`)
    .join(' | ');

async function firstDeltaViaHttp(api: Api, backend: string): Promise<PartTimes> {
  const s = (
    await api.call<{ id: string; backend: string }>('POST', '/api/sessions', { title: `bench first delta ${backend}` })
  ).body;
  if (s.backend !== backend) throw new Error(`session backend ${s.backend}, wanted ${backend}`);
  const sse = await api.events(s.id);
  const times = new PartTimes();
  try {
    for (let i = 0; i <= RUNS; i++) {
      const t0 = now();
      const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, {
        text: `bench message ${i}`,
      });
      if (r.status !== 202) throw new Error(`message: ${r.status} ${r.text}`);
      const mid = r.body.messageId;
      const first = await sse.waitFor(
        'first delta',
        (e) => e.event === 'text.delta' && e.data.messageId === mid,
        TURN_MS,
      );
      // message 0 starts the runner: cold, not counted
      if (i > 0) {
        const hops = hopComments(sse.comments).get(first.id);
        const way = messageHops(r.headers);
        const { request, sent } = proxyStamps(first.data.text);
        times.add(first.receivedAt - t0, [
          ['POST → Worker', (way?.workerIn ?? NaN) - wall(t0)],
          ['Worker: auth, D1, body', (way?.workerCall ?? NaN) - (way?.workerIn ?? NaN)],
          ['Worker → hub', (way?.hubIn ?? NaN) - (way?.workerCall ?? NaN)],
          ['hub → runner has the user_message', (hops?.userMessage ?? NaN) - (way?.hubIn ?? NaN)],
          ['runner → CLI stdin', (hops?.stdin ?? NaN) - (hops?.userMessage ?? NaN)],
          ['CLI stdin → model has the request', request - (hops?.stdin ?? NaN)],
          ['model: request → first delta out', sent - request],
          ['model → runner read', (hops?.read ?? NaN) - sent],
          ['runner: codec, buffer, send', (hops?.sent ?? NaN) - (hops?.read ?? NaN)],
          ['link → hub', (hops?.hubIn ?? NaN) - (hops?.sent ?? NaN)],
          ['hub → Worker SSE write', (hops?.sse ?? NaN) - (hops?.hubIn ?? NaN)],
          ['Worker → SSE client', wall(first.receivedAt) - (hops?.sse ?? NaN)],
        ]);
      }
      await sse.turnDone(mid, TURN_MS);
    }
  } finally {
    await sse.close();
    await api.call('DELETE', `/api/sessions/${s.id}`);
  }
  return times;
}

async function firstDeltaBare(backend: 'claude' | 'pi', modelUrl: string): Promise<PartTimes> {
  const h = await startCli(backend, modelUrl);
  const times = new PartTimes();
  try {
    for (let i = 0; i <= RUNS; i++) {
      const before = h.events.length;
      const t0 = now();
      h.proc.sendUserMessage({ text: `bench message ${i}` });
      await h.waitFor((_e, all) => all.slice(before).some((x) => x.type === 'text.delta'), TURN_MS);
      const t1 = now();
      const delta = h.events.slice(before).find((x) => x.type === 'text.delta');
      if (i > 0 && delta?.type === 'text.delta') {
        const { request, sent } = proxyStamps(delta.text);
        times.add(t1 - t0, [
          ['stdin → model has the request', request - wall(t0)],
          ['model: request → first delta out', sent - request],
          ['first delta → codec', wall(t1) - sent],
        ]);
      }
      await h.turn(i + 1, TURN_MS);
    }
  } finally {
    await h.close();
  }
  return times;
}

async function viewerLatency(
  api: Api,
  n: number,
  workerdPids: number[],
  edgeGroups: Set<number>,
): Promise<{
  edgeCpu: string;
  p50: number;
  p99: number;
  /** model → the Worker's SSE write (the server's part), and from there to this client. */
  server: { p50: number; p99: number };
  tail: { p50: number; p99: number };
  spreadP50: number;
  spreadP99: number;
  pairs: number;
  openMs: number;
  lagP99: number;
  lagMax: number;
  clientCpuMs: number;
  workerdCpuMs: number;
  turnMs: number;
  rss: ViewerRss;
}> {
  const s = (await api.call<{ id: string }>('POST', '/api/sessions', { title: `bench ${n} viewers` })).body;
  // Warm the runner first, so the measured turn is not a cold start.
  const warm = await api.events(s.id);
  const w = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, { text: 'warm up' });
  await warm.turnDone(w.body.messageId, TURN_MS);
  const after = warm.lastId as string;
  await warm.close();
  const rssBefore = workerdPids.map(rssKb);
  const t0 = now();
  const viewers: SseStream[] = [];
  for (let i = 0; i < n; i += 50) {
    viewers.push(
      ...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => api.events(s.id, { after })))),
    );
  }
  const openMs = now() - t0;
  const bad = viewers.filter((v) => v.status !== 200).length;
  if (bad > 0) throw new Error(`${bad} of ${n} viewers could not connect`);
  const rssConnected = workerdPids.map(rssKb);
  let closed = false;
  try {
    const deltas = fanoutDeltas(n);
    const text = `#offline ${JSON.stringify({ text: 'z'.repeat(deltas), chunks: deltas, delayMs: PACE_MS })}`;
    const lag = monitorEventLoopDelay({ resolution: 5 });
    lag.enable();
    const cpu0 = process.cpuUsage();
    const wcpu = () => workerdPids.reduce((a, p) => a + cpuMs(p), 0);
    const wcpu0 = wcpu();
    const edgeProcs = liveInGroups(edgeGroups);
    const ecpu0 = edgeProcs.map((p) => cpuMs(p.pid));
    const tt0 = now();
    const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, { text });
    if (r.status !== 202) throw new Error(`message with ${n} viewers: ${r.status} ${r.text.slice(0, 500)}`);
    const mid = r.body.messageId;
    await Promise.all(viewers.map((v) => v.turnDone(mid, TURN_MS)));
    const turnMs = now() - tt0;
    lag.disable();
    const cpu = process.cpuUsage(cpu0);
    const clientCpuMs = (cpu.user + cpu.system) / 1000;
    const workerdCpuMs = wcpu() - wcpu0;
    const edgeCpu = edgeProcs.map((p, i) => `${comm(p.pid)}[${p.pid}] ${cpuMs(p.pid) - (ecpu0[i] ?? 0)} ms`).join(', ');
    const lat: number[] = [];
    const server: number[] = [];
    const tail: number[] = [];
    const spread: number[] = [];
    const firstById = new Map<string, number>();
    for (const v of viewers)
      for (const e of v.events)
        if (e.event === 'text.delta') firstById.set(e.id, Math.min(firstById.get(e.id) ?? Infinity, e.receivedAt));
    for (const v of viewers) {
      const got = v.events.filter((e) => e.event === 'text.delta' && e.data.messageId === mid);
      if (got.length !== deltas) throw new Error(`a viewer got ${got.length} of ${deltas} deltas`);
      const hops = hopComments(v.comments);
      for (const e of got) {
        const h = hops.get(e.id);
        if (h === undefined) throw new Error(`delta ${e.id} came without hop stamps (BENCH_HOPS off?)`);
        lat.push(wall(e.receivedAt) - modelStamp(e.data.text));
        server.push(h.sse - modelStamp(e.data.text));
        tail.push(wall(e.receivedAt) - h.sse);
        spread.push(e.receivedAt - (firstById.get(e.id) as number));
      }
    }
    const rssTurn = workerdPids.map(rssKb);
    await Promise.all(viewers.map((v) => v.close()));
    closed = true;
    const rssClosed = await settledRss(workerdPids);
    return {
      rss: { before: rssBefore, connected: rssConnected, turn: rssTurn, closed: rssClosed },
      edgeCpu,
      p50: median(lat),
      p99: quantile(lat, 0.99),
      server: { p50: median(server), p99: quantile(server, 0.99) },
      tail: { p50: median(tail), p99: quantile(tail, 0.99) },
      spreadP50: median(spread),
      spreadP99: quantile(spread, 0.99),
      pairs: lat.length,
      openMs,
      lagP99: lag.percentile(99) / 1e6,
      lagMax: lag.max / 1e6,
      clientCpuMs,
      workerdCpuMs,
      turnMs,
    };
  } finally {
    if (!closed) await Promise.all(viewers.map((v) => v.close()));
    await api.call('DELETE', `/api/sessions/${s.id}`);
  }
}

/** workerd RSS (kB, one entry per workerd process) at points of a fan-out run. */
interface ViewerRss {
  before: number[];
  connected: number[];
  turn: number[];
  closed: number[];
}

/**
 * RSS once the closes have reached workerd: sampled every second until two samples in a row agree
 * within 1 MiB (at most 20 s), so what is kept after the viewers left is told apart from what is
 * still being torn down.
 */
async function settledRss(pids: number[]): Promise<number[]> {
  let prev = pids.map(rssKb);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const cur = pids.map(rssKb);
    if (cur.every((kb, j) => Math.abs(kb - (prev[j] ?? 0)) < 1024)) return cur;
    prev = cur;
  }
  return prev;
}

/**
 * (5) Does workerd give back what viewers took, or reuse it? Opens `n` viewers of one idle session
 * and closes them, `rounds` times, RSS of each workerd process after each round.
 */
async function viewerMemoryRounds(api: Api, n: number, rounds: number, pids: number[]): Promise<number[][]> {
  const s = (await api.call<{ id: string }>('POST', '/api/sessions', { title: `bench viewer memory` })).body;
  const out: number[][] = [pids.map(rssKb)];
  try {
    for (let r = 0; r < rounds; r++) {
      const viewers: SseStream[] = [];
      for (let i = 0; i < n; i += 50)
        viewers.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => api.events(s.id)))));
      await Promise.all(viewers.map((v) => v.close()));
      out.push(await settledRss(pids));
    }
  } finally {
    await api.call('DELETE', `/api/sessions/${s.id}`);
  }
  return out;
}

/** (4): one warm session, one viewer, one paced answer; every delta's stamps, hop by hop. */
async function hopBreakdown(api: Api, backend: string): Promise<{ n: number; rows: string[] }> {
  const s = (await api.call<{ id: string }>('POST', '/api/sessions', { title: `bench hops ${backend}` })).body;
  const sse = await api.events(s.id);
  try {
    const w = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, { text: 'warm up' });
    await sse.turnDone(w.body.messageId, TURN_MS);
    const text = `#offline ${JSON.stringify({ text: 'z'.repeat(DELTAS), chunks: DELTAS, delayMs: PACE_MS })}`;
    const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, { text });
    if (r.status !== 202) throw new Error(`hops message: ${r.status} ${r.text}`);
    const mid = r.body.messageId;
    await sse.turnDone(mid, TURN_MS);
    const byId = hopComments(sse.comments);
    const per = new Map<HopName | 'total', number[]>();
    let n = 0;
    for (const e of sse.events) {
      if (e.event !== 'text.delta' || e.data.messageId !== mid) continue;
      const h = byId.get(e.id);
      if (h === undefined) throw new Error(`delta ${e.id} came without hop stamps (BENCH_HOPS off?)`);
      const st: Stamps = { model: modelStamp(e.data.text), ...h, client: wall(e.receivedAt) };
      let prev = st.model;
      for (const [name] of HOPS) {
        per.set(name, [...(per.get(name) ?? []), st[name] - prev]);
        prev = st[name];
      }
      per.set('total', [...(per.get('total') ?? []), st.client - st.model]);
      n++;
    }
    if (n !== DELTAS) throw new Error(`hops: got ${n} of ${DELTAS} deltas`);
    const row = (label: string, xs: number[]) =>
      `${label.padEnd(52)} ${f2(median(xs)).padStart(8)} / ${f2(quantile(xs, 0.99))}`;
    return {
      n,
      rows: [
        ...HOPS.map(([name, label]) => row(label, per.get(name) ?? [])),
        row('total: model → SSE client', per.get('total') ?? []),
      ],
    };
  } finally {
    await sse.close();
    await api.call('DELETE', `/api/sessions/${s.id}`);
  }
}

async function memory(stack: Stack, api: Api, backend: string, workerdRss: () => number) {
  const sessions: string[] = [];
  const before = workerdRss();
  const perRunner: number[] = [];
  const perGroup: number[] = [];
  try {
    for (let i = 0; i < SESSIONS; i++) {
      const s = (await api.call<{ id: string }>('POST', '/api/sessions', { title: `bench mem ${backend} ${i}` })).body;
      sessions.push(s.id);
      const sse = await api.events(s.id);
      const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.id}/messages`, {
        text: `memory ${i}`,
      });
      await sse.turnDone(r.body.messageId, TURN_MS);
      await sse.close();
    }
    const tasks = (await stack.runners()).filter(
      (t) => t.sessionId !== null && sessions.includes(t.sessionId) && t.lastStatus === 'RUNNING',
    );
    const procs = listProcs();
    for (const t of tasks) {
      perRunner.push(rssKb(t.pid as number));
      perGroup.push(procs.filter((p) => t.groups.includes(p.pgid)).reduce((a, p) => a + rssKb(p.pid), 0));
    }
    const after = workerdRss();
    return {
      runnerKb: median(perRunner),
      groupKb: median(perGroup),
      workerdPerSessionKb: (after - before) / SESSIONS,
      workerdKb: after,
      n: tasks.length,
    };
  } finally {
    for (const id of sessions) await api.call('DELETE', `/api/sessions/${id}`);
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-e2e-'));
  const state = throwawayEdgeState('switchyard-bench-e2e', { onDisk: process.argv.includes('--edge-state-on-disk') });
  const model = await spawnUrlProcess([OFFLINE_MODEL_BIN, '--port', '0']);
  const proxy = await spawnUrlProcess([join(ROOT, 'bench', 'e2e', 'stamp-proxy.ts'), '--upstream', model.url]);
  const env: NodeJS.ProcessEnv = { ...process.env, SWITCHYARD_MODEL_URL: proxy.url };
  delete env.ANTHROPIC_API_KEY;
  delete env.SWITCHYARD_ADMIN_PASSWORD;
  let stack: Stack | undefined;
  let floor: Floor | undefined;
  const lines: string[] = [];
  try {
    stack = await startStack({
      port: 0,
      frozenEdge: true,
      devDir: join(dir, 'dev'),
      persistTo: state.dir,
      env,
      // (4): hop stamps on (bench only; a few stamps per event, nothing else changes on the path).
      runnerEnv: HOPS_ON.runnerEnv,
      // No fixed hub URL: a runner dials the origin its session's first message came through, so
      // (1) without wrangler dev's proxy has the runner's link without it too.
      edgeVars: { ...HOPS_ON.edgeVars, RUNNER_HUB_URL: '' },
      readyTimeoutMs: 240_000,
      output: () => {},
      log: () => {},
    });
    const api = await Api.login(stack.url, stack.admin.username, stack.admin.password);
    for (const s of stack.services) s.sample();
    const edgeGroups = new Set(stack.services.find((s) => s.name === 'edge')?.groups ?? []);
    // wrangler dev runs two workerd processes (its proxy and the Worker); both count.
    const workerds = liveInGroups(edgeGroups)
      .filter((p) => comm(p.pid) === 'workerd')
      .map((p) => p.pid);
    if (workerds.length === 0) throw new Error('no workerd process under the edge service');
    const workerdRss = () => workerds.reduce((a, p) => a + rssKb(p), 0);
    const workerdStart = workerdRss();
    const out = (l: string) => {
      lines.push(l);
      console.log(l);
    };
    out(
      `machine: ${(await import('node:os')).cpus().length} cores, node ${process.version}; runs=${RUNS}, deltas=${DELTAS} (fan-out ${FANOUT_DELTAS}) every ${PACE_MS} ms, sessions=${SESSIONS}; edge state ${state.tmpfs ? 'on tmpfs' : 'on disk'}`,
    );

    const theFloor = await startFloor();
    floor = theFloor;
    const latency: Record<string, Awaited<ReturnType<typeof viewerLatency>>> = {};
    for (const backend of ['claude', 'pi'] as const) {
      if (backend === 'pi') {
        const put = await api.call('PUT', '/api/admin/settings', { llmBackend: 'pi' });
        if (put.status !== 200) throw new Error(`switch to pi: ${put.status} ${put.text}`);
      }
      const viaHttp = await firstDeltaViaHttp(api, backend);
      if (stack.edgeDirectUrl === undefined) throw new Error('the edge did not say where Miniflare serves the Worker');
      const viaDirect = await firstDeltaViaHttp(new Api(stack.edgeDirectUrl, api.token), backend);
      const viaBare = await firstDeltaBare(backend, proxy.url);
      const http = viaHttp.total;
      const bare = viaBare.total;
      out(
        `(1) ${backend}: first text.delta, warm — SSE client ${f1(median(http))} ms (min ${f1(Math.min(...http))}) vs bare CLI ${f1(median(bare))} ms (min ${f1(Math.min(...bare))}) → ratio ${f2(median(http) / median(bare))}x (+${f1(median(http) - median(bare))} ms)`,
      );
      out(`    SSE path, medians (ms): ${describe(viaHttp)}`);
      const direct = viaDirect.total;
      out(
        `    without wrangler dev's proxy (client and runner to Miniflare's own socket): SSE client ${f1(median(direct))} ms (min ${f1(Math.min(...direct))}) → ratio ${f2(median(direct) / median(bare))}x (+${f1(median(direct) - median(bare))} ms)`,
      );
      out(`    … its path, medians (ms): ${describe(viaDirect)}`);
      out(`    bare CLI, medians (ms): ${describe(viaBare)}`);
      const floorOf = async (way: 'proxy' | 'direct') => ({
        durable: median(await theFloor.measure(way, { durable: true, runs: RUNS })),
        bare: median(await theFloor.measure(way, { durable: false, runs: RUNS })),
      });
      const fp = await floorOf('proxy');
      const fd = await floorOf('direct');
      out(
        `    the platform's floor (bench/e2e/floor.ts: the same client, Worker, Durable Object RPC, WebSocket out and back, viewer frames and relay; a peer that answers at once; no app code), the hub's two log writes in: through the proxy ${f1(fp.durable)} ms, straight ${f1(fd.durable)} ms (without the writes ${f1(fp.bare)} / ${f1(fd.bare)} ms)`,
      );
      const b = median(bare);
      out(
        `    → no path through this platform gets under (bare + floor) / bare: ${f2((b + fp.durable) / b)}x through the proxy, ${f2((b + fd.durable) / b)}x straight; the stack over bare + floor (the app's own part): +${f1(median(http) - b - fp.durable)} ms through the proxy, +${f1(median(direct) - b - fd.durable)} ms straight`,
      );
      const hops = await hopBreakdown(api, backend);
      out(`(4) ${backend}: per hop over ${hops.n} deltas of one paced answer, 1 viewer (median / p99, ms):`);
      for (const row of hops.rows) out(`    ${row}`);
      const mem = await memory(stack, api, backend, workerdRss);
      out(
        `(3) ${backend}: per session RSS — runner ${mib(mem.runnerKb)} MiB, runner+CLI groups ${mib(mem.groupKb)} MiB (median of ${mem.n}); workerd +${mib(mem.workerdPerSessionKb)} MiB per live session (both workerd processes ${mib(mem.workerdKb)} MiB, ${mib(workerdStart)} MiB at start)`,
      );
    }
    // Only (1) uses the floor: its two workerd processes go before the fan-out and memory rounds.
    await theFloor.stop();
    floor = undefined;
    // (2) after both backends' (1), (4) and (3): a turn to 500 viewers leaves workerd busy for
    // seconds after it (wrangler dev tells the Worker of a closed client late), which would land in
    // pi's first deltas. A claude session again, as before the switch.
    if (VIEWERS.length > 0) {
      const put = await api.call('PUT', '/api/admin/settings', { llmBackend: 'claude' });
      if (put.status !== 200) throw new Error(`switch back to claude: ${put.status} ${put.text}`);
      for (const n of VIEWERS) {
        latency[n] = await viewerLatency(api, n, workerds, edgeGroups);
        const l = latency[n];
        const base = latency[VIEWERS[0] as number];
        out(
          `(2) ${n} viewer(s): delivery latency p50 ${f1(l.p50)} ms, p99 ${f1(l.p99)} ms (ratio to ${VIEWERS[0]}: p50 ${f2(l.p50 / (base?.p50 ?? NaN))}x, p99 ${f2(l.p99 / (base?.p99 ?? NaN))}x); spread after the first viewer p50 ${f1(l.spreadP50)} ms, p99 ${f1(l.spreadP99)} ms; ${l.pairs} deliveries; ${n} viewers connected in ${f1(l.openMs)} ms`,
        );
        out(
          `    split at the Worker's SSE write: model → Worker SSE write p50 ${f1(l.server.p50)} ms, p99 ${f1(l.server.p99)} ms (ratio to ${VIEWERS[0]}: p50 ${f2(l.server.p50 / (base?.server.p50 ?? NaN))}x, p99 ${f2(l.server.p99 / (base?.server.p99 ?? NaN))}x); Worker SSE write → client (proxy, client) p50 ${f1(l.tail.p50)} ms, p99 ${f1(l.tail.p99)} ms`,
        );
        const per = (xs: number[]) => xs.map(mib).join(' + ');
        out(
          `    workerd RSS MiB per process (pids ${workerds.join(', ')}): before ${per(l.rss.before)}, ${n} connected ${per(l.rss.connected)}, after the turn ${per(l.rss.turn)}, closed and settled ${per(l.rss.closed)}`,
        );
        out(
          `    during that turn (${f1(l.turnMs)} ms): workerd CPU ${f1(l.workerdCpuMs)} ms, this client's CPU ${f1(l.clientCpuMs)} ms, client event-loop delay p99 ${f1(l.lagP99)} ms (max ${f1(l.lagMax)} ms); edge processes: ${l.edgeCpu}`,
        );
      }
    }
    const most = Math.max(...VIEWERS);
    if (most > 1) {
      const rounds = await viewerMemoryRounds(api, most, 3, workerds);
      out(
        `(5) ${most} viewers of an idle session opened then closed, 3 rounds; workerd RSS MiB per process after each: ${rounds.map((r) => r.map(mib).join(' + ')).join(' → ')}`,
      );
    }
    out(`workerd RSS (both processes) at the end: ${mib(workerdRss())} MiB`);
  } finally {
    await floor?.stop();
    await stack?.stop();
    model.child.kill('SIGTERM');
    proxy.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    rmSync(state.dir, { recursive: true, force: true });
  }
}

await main();
