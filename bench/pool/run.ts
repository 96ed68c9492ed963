// bench/pool: what the warm runner pool saves on a session's first message, in one run on one
// machine, through HTTP only. The local runner host simulates Fargate's provisioning wait
// (`--provision-delay`), so a cold launch costs what it costs in production plus this machine's
// runner and CLI start. For each backend:
//   warm turn:  POST /messages → first text.delta at an SSE client, 2nd+ message of one session
//               (the runner and its CLI are up): the baseline.
//   cold first: the first message of a new session with no pool (size 0): provisioning + runner
//               start + CLI start + the turn.
//   pooled first: the first message of a new session while the pool holds an idle runner.
//   resumed (cold, pooled): the next message of a session whose runner stopped (as ECS stops an
//               idle task), so the runner restores the transcript and the files and starts its CLI
//               resuming it: with no pool it waits for provisioning, with one it takes a pooled
//               runner, which replaces its prewarmed CLI (claude) or reloads it onto the restored
//               conversation (pi) (docs/DESIGN.md "Warm runner pool").
//   started ahead (pooled, cold): POST /start as the web app sends it at the first keystroke,
//               the runner `ready`, then the first message: start → ready (the typing time it
//               takes to hide the launch) and POST → first text.delta after it.
//   started ahead, sent at once (cold): POST /start, then the first message right behind it,
//               while the container is still provisioning (typing shorter than the launch): its
//               POST → first text.delta, beside the cold first message with no start, and how
//               many of those runners took the CLI warm-up anyway (they should skip it).
//   bare CLI:   the same CLI with nothing around it (spawned as test/helpers/cli-harness.ts does,
//               the stack's offline model): its first message's first text.delta and its later
//               ones. A CLI's first turn is slower than its later ones on its own; a pooled
//               runner's CLI takes it before the claim (runner/src/cli/warm-up.ts), so what a
//               pooled first message costs over a warm turn is the pool path (claim, hub link)
//               and what of the CLI's first turn the warm-up leaves.
//   straight to the Worker: pooled first messages again, each followed by two warm turns of
//               its session, with the client and so the claimed runner's hub link going to
//               Miniflare's own socket instead of through `wrangler dev`'s proxy, which a
//               deployed edge does not have (bench/e2e does the same for warm turns).
// The model is the offline one behind bench/e2e's stamp proxy, so a first delta's time in the CLI
// splits at the model: the CLI's way to the model's request, the model, and the way back.
// Ratios of medians to the warm turn, from this run (goal: pooled first ≤ 1.5× a warm turn).
// The edge's state is on tmpfs where the machine has one (bench/edge-state.ts);
// `--edge-state-on-disk` puts it under the temp dir instead, to show what workerd's fsyncs cost.
// `--claim-after 2s` claims each pooled runner that long after it turned idle instead of at once.
// Run: npm run bench -- pool   (or node bench/pool/run.ts [--runs N] [--provision-delay 10s] [--backends claude,pi] [--claim-after 2s] [--edge-state-on-disk])
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { throwawayEdgeState } from '../edge-state.ts';
import { firstDeltaHops, hopComments, HOPS_ON, messageHops, PartTimes, proxyStamps } from '../hops.ts';
import { startStack, type Stack } from '../../scripts/start.ts';
import { readinessFor } from '@switchyard/runner/cli';
import { parseDuration } from '../../runner/src/config.ts';
import { startCli } from '../../test/helpers/cli-harness.ts';
import { OFFLINE_MODEL_BIN, spawnUrlProcess } from '../url-process.ts';
import { stopSessionRunner } from '../../test/helpers/runner-tasks.ts';
import { Api, until } from '../../test/helpers/sse-client.ts';
import { median } from '../stats.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
};
const RUNS = Number(arg('--runs', '3'));
const DELAY = arg('--provision-delay', '10s');
const BACKENDS = arg('--backends', 'claude').split(',') as Array<'claude' | 'pi'>;
const TURN_MS = 180_000;

// The runner's own duration syntax (500ms, 10s, 15m; a bare number is milliseconds), as the host reads it.
const duration = (flag: string, value: string): number => {
  const ms = parseDuration(value);
  if (ms === undefined) throw new Error(`${flag} must be a duration such as 10s or 500ms`);
  return ms;
};
const delayMs = duration('--provision-delay', DELAY);
// How long a pooled runner has been idle when it is claimed: at once by default (a burst of new
// sessions draining the pool); a production pool mostly holds its runners for longer.
const claimAfterMs = duration('--claim-after', arg('--claim-after', '0'));

const now = () => performance.now();
const wall = (t: number) => performance.timeOrigin + t;
const f0 = (x: number) => x.toFixed(0);
const f1 = (x: number) => x.toFixed(1);

type PoolStatus = { runners: Array<{ id: string; backend: string; state: string }> };

/** One message to a session: ms from POST to the first text.delta at the SSE client; waits for turn.done. */
async function firstDelta(
  api: Api,
  sessionId: string,
  text: string,
  sse: Awaited<ReturnType<Api['events']>>,
  onPost?: (wallClock: number) => void,
  parts?: PartTimes,
) {
  onPost?.(Date.now());
  const t0 = now();
  const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${sessionId}/messages`, { text });
  if (r.status !== 202) throw new Error(`message: ${r.status} ${r.text}`);
  const mid = r.body.messageId;
  const first = await sse.waitFor('first delta', (e) => e.event === 'text.delta' && e.data.messageId === mid, TURN_MS);
  const ms = first.receivedAt - t0;
  parts?.add(
    ms,
    firstDeltaHops(
      wall(t0),
      messageHops(r.headers),
      hopComments(sse.comments).get(first.id),
      proxyStamps(first.data.text),
      wall(first.receivedAt),
    ),
  );
  await sse.turnDone(mid, TURN_MS);
  return ms;
}

async function newSession(api: Api, backend: string) {
  const r = await api.call<{ id: string; backend: string }>('POST', '/api/sessions', { title: 'bench pool' });
  if (r.status !== 201) throw new Error(`new session: ${r.status} ${r.text}`);
  const s = r.body;
  if (s.backend !== backend) throw new Error(`session backend ${s.backend}, wanted ${backend}`);
  return { id: s.id, sse: await api.events(s.id) };
}

/** A runner started ahead (POST /start): ms from the start to `ready`, then the first message's first delta. */
async function startedAhead(api: Api, backend: string, text: string) {
  const s = await newSession(api, backend);
  const t0 = now();
  const r = await api.call('POST', `/api/sessions/${s.id}/start`);
  if (r.status !== 202) throw new Error(`start: ${r.status} ${r.text}`);
  const ready = await s.sse.waitFor(
    'ready',
    (e) => e.event === 'session.status' && (e.data as { state?: string }).state === 'ready',
    delayMs + TURN_MS,
  );
  const toReady = ready.receivedAt - t0;
  const first = await firstDelta(api, s.id, text, s.sse);
  await s.sse.close();
  await api.call('DELETE', `/api/sessions/${s.id}`);
  return { toReady, first };
}

/** POST /start, then at once the first message: ms from that POST to its first delta, and the runner's warm-up steps. */
async function startedThenSent(stack: Stack, api: Api, backend: string, text: string) {
  const s = await newSession(api, backend);
  const r = await api.call('POST', `/api/sessions/${s.id}/start`);
  if (r.status !== 202) throw new Error(`start: ${r.status} ${r.text}`);
  const first = await firstDelta(api, s.id, text, s.sse);
  const ready = runnerLogLine(stack, s.id, 'cli ready') as { warmUp?: { steps: number } } | undefined;
  await s.sse.close();
  await api.call('DELETE', `/api/sessions/${s.id}`);
  return { first, warmUpSteps: ready?.warmUp?.steps ?? 0 };
}

async function idlePooled(api: Api, backend: string, n: number): Promise<void> {
  await until(
    `${n} idle pooled ${backend} runner(s)`,
    async () => {
      const r = await api.call<PoolStatus>('GET', '/api/admin/runner-pool');
      return r.body.runners.filter((x) => x.backend === backend && x.state === 'idle').length >= n;
    },
    delayMs + TURN_MS,
  );
  if (claimAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, claimAfterMs));
}

/** A bare CLI per run: ms from writing a message to its first text.delta, the first message and two later ones. */
async function bareTurns(backend: 'claude' | 'pi', modelUrl: string) {
  const first: number[] = [];
  const later: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const h = await startCli(backend, modelUrl);
    try {
      // Ready first, as a pooled CLI is: the first message must not wait for the CLI's start.
      const readiness = readinessFor(backend, {});
      for (const line of readiness.lines) h.proc.writeControl(line);
      await until(
        `the bare ${backend} CLI ready`,
        () =>
          h.stdout.some((l) => readiness.isReady(l, undefined)) ||
          h.events.some((e) => readiness.isReady(undefined, e)),
        TURN_MS,
      );
      for (let j = 0; j < 3; j++) {
        const before = h.events.length;
        const t0 = now();
        h.proc.sendUserMessage({ text: `bare ${i}.${j}` });
        await h.waitFor((_e, all) => all.slice(before).some((x) => x.type === 'text.delta'), TURN_MS);
        (j === 0 ? first : later).push(now() - t0);
        await h.turn(j + 1, TURN_MS);
      }
    } finally {
      await h.close();
    }
  }
  return { first: median(first), later: median(later) };
}

/** ms after the POST at which the claim reached the runner, its hub link opened and was welcomed. */
interface PooledSteps {
  claimed: number;
  opened: number;
  /** The link's WebSocket upgrade, dialled at the claim: the runner to the edge and back (ms). */
  upgrade: number;
  linked: number;
}

/**
 * Where a pooled first message's time goes, from the claimed runner's log (its lines carry the
 * wall clock, as the bench does).
 */
function pooledSteps(stack: Stack, sessionId: string, postedAt: number): PooledSteps {
  const after = (line: { t: string } | undefined) => (line === undefined ? Number.NaN : Date.parse(line.t) - postedAt);
  const open = runnerLogLine(stack, sessionId, 'hub link open') as { t: string; upgradeMs?: number } | undefined;
  return {
    claimed: after(runnerLogLine(stack, sessionId, 'pooled runner claimed')),
    opened: after(open),
    upgrade: open?.upgradeMs ?? Number.NaN,
    linked: after(runnerLogLine(stack, sessionId, 'hub link up')),
  };
}

/** The first line with this `msg` in the log of the runner that served the session. */
function runnerLogLine(stack: Stack, sessionId: string, msg: string): { t: string } | undefined {
  const dir = join(stack.hostStateDir, 'logs');
  const log = readdirSync(dir)
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .find((text) => text.includes(sessionId));
  const line = log?.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
  return line === undefined ? undefined : (JSON.parse(line) as { t: string });
}

async function benchBackend(stack: Stack, api: Api, direct: Api, backend: 'claude' | 'pi', modelUrl: string) {
  const r = await api.call('PUT', '/api/admin/settings', { llmBackend: backend });
  if (r.status !== 200) throw new Error(`switch to ${backend}: ${r.status} ${r.text}`);
  const cold: number[] = [];
  const warm: number[] = [];
  const pooled: number[] = [];
  const warmHops = new PartTimes();
  const pooledHops = new PartTimes();
  const steps: PooledSteps[] = [];
  const aheadPooled: Array<{ toReady: number; first: number }> = [];
  const aheadCold: Array<{ toReady: number; first: number }> = [];
  const sentAtOnce: Array<{ first: number; warmUpSteps: number }> = [];
  const straightWarm: number[] = [];
  const straightPooled: number[] = [];
  const resumedCold: number[] = [];
  const resumedPooled: number[] = [];
  try {
    // Cold first messages and warm turns (no pool).
    await api.call('PUT', '/api/admin/runner-pool', { claude: 0, pi: 0 });
    for (let i = 0; i < RUNS; i++) {
      const s = await newSession(api, backend);
      cold.push(await firstDelta(api, s.id, `cold ${i}`, s.sse));
      for (let j = 0; j < 2; j++) warm.push(await firstDelta(api, s.id, `warm ${i}.${j}`, s.sse, undefined, warmHops));
      await stopSessionRunner(stack, api, s.id, TURN_MS);
      resumedCold.push(await firstDelta(api, s.id, `resumed cold ${i}`, s.sse));
      await s.sse.close();
      await api.call('DELETE', `/api/sessions/${s.id}`);
    }
    // Pooled first messages: one idle runner waiting each time.
    await api.call('PUT', '/api/admin/runner-pool', { [backend]: 1 });
    for (let i = 0; i < RUNS; i++) {
      await idlePooled(api, backend, 1);
      const s = await newSession(api, backend);
      let postedAt = 0;
      pooled.push(await firstDelta(api, s.id, `pooled ${i}`, s.sse, (t) => (postedAt = t), pooledHops));
      steps.push(pooledSteps(stack, s.id, postedAt));
      await stopSessionRunner(stack, api, s.id, TURN_MS);
      await idlePooled(api, backend, 1);
      resumedPooled.push(await firstDelta(api, s.id, `resumed pooled ${i}`, s.sse));
      await s.sse.close();
      await api.call('DELETE', `/api/sessions/${s.id}`);
    }
    for (let i = 0; i < RUNS; i++) {
      await idlePooled(api, backend, 1);
      const s = await newSession(direct, backend);
      straightPooled.push(await firstDelta(direct, s.id, `straight pooled ${i}`, s.sse));
      for (let j = 0; j < 2; j++) straightWarm.push(await firstDelta(direct, s.id, `straight warm ${i}.${j}`, s.sse));
      await s.sse.close();
      await direct.call('DELETE', `/api/sessions/${s.id}`);
    }
    for (let i = 0; i < RUNS; i++) {
      await idlePooled(api, backend, 1);
      aheadPooled.push(await startedAhead(api, backend, `ahead pooled ${i}`));
    }
    await api.call('PUT', '/api/admin/runner-pool', { claude: 0, pi: 0 });
    for (let i = 0; i < RUNS; i++) aheadCold.push(await startedAhead(api, backend, `ahead cold ${i}`));
    for (let i = 0; i < RUNS; i++) sentAtOnce.push(await startedThenSent(stack, api, backend, `at once ${i}`));
  } finally {
    await api.call('PUT', '/api/admin/runner-pool', { claude: 0, pi: 0 });
  }
  const bare = await bareTurns(backend, modelUrl);
  const w = median(warm);
  const p = median(pooled);
  console.log(
    `${backend}: warm turn ${f0(w)} ms (n=${warm.length}); cold first ${f0(median(cold))} ms = ${(median(cold) / w).toFixed(1)}x; ` +
      `pooled first ${f0(p)} ms = ${(p / w).toFixed(2)}x (goal <= 1.5x); ` +
      `cold/pooled ${(median(cold) / p).toFixed(1)}x   [cold ${cold.map(f0).join(', ')}; pooled ${pooled.map(f0).join(', ')}]`,
  );
  console.log(
    `  bare CLI: first message ${f0(bare.first)} ms, later ${f0(bare.later)} ms = ${(bare.first / bare.later).toFixed(2)}x on its own; ` +
      `a pooled runner's CLI takes that first turn before the claim; a pooled first message costs +${f0(p - w)} ms over a warm turn`,
  );
  const rc = median(resumedCold);
  const rp = median(resumedPooled);
  console.log(
    `  resumed (the next message after the runner stopped): cold ${f0(rc)} ms = ${(rc / w).toFixed(1)}x, ` +
      `pooled ${f0(rp)} ms = ${(rp / w).toFixed(1)}x a warm turn; cold/pooled ${(rc / rp).toFixed(1)}x   ` +
      `[cold ${resumedCold.map(f0).join(', ')}; pooled ${resumedPooled.map(f0).join(', ')}]`,
  );
  const ahead = (xs: Array<{ toReady: number; first: number }>) => {
    const first = median(xs.map((x) => x.first));
    return `start → ready ${f0(median(xs.map((x) => x.toReady)))} ms, then first ${f0(first)} ms = ${(first / w).toFixed(2)}x`;
  };
  console.log(`  started ahead: pooled ${ahead(aheadPooled)}; cold ${ahead(aheadCold)}`);
  const sw = median(straightWarm);
  const sp = median(straightPooled);
  console.log(
    `  straight to the Worker (no wrangler dev proxy): warm turn ${f0(sw)} ms (n=${straightWarm.length}), ` +
      `pooled first ${f0(sp)} ms = ${(sp / sw).toFixed(2)}x   [pooled ${straightPooled.map(f0).join(', ')}]`,
  );
  const atOnce = median(sentAtOnce.map((x) => x.first));
  console.log(
    `  started ahead, sent at once (cold): first ${f0(atOnce)} ms (cold first message with no start ${f0(median(cold))} ms); ` +
      `runners that took the warm-up anyway: ${sentAtOnce.filter((x) => x.warmUpSteps > 0).length} of ${sentAtOnce.length}`,
  );
  console.log(
    `  pooled first message, ms after the POST (medians): the claim reaches the runner +${f0(median(steps.map((x) => x.claimed)))}, ` +
      `its hub link opens +${f0(median(steps.map((x) => x.opened)))} (the upgrade ${f1(median(steps.map((x) => x.upgrade)))} ms) ` +
      `and is welcomed +${f0(median(steps.map((x) => x.linked)))}, the first delta at the client +${f0(p)}`,
  );
  console.log('  per hop, medians (ms): warm turn / pooled first message');
  const pooledParts = new Map(pooledHops.medians());
  for (const [name, ms] of warmHops.medians()) {
    console.log(
      `    ${name.padEnd(48)} ${f1(ms).padStart(6)} / ${f1(pooledParts.get(name) ?? Number.NaN).padStart(6)}`,
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-pool-'));
const state = throwawayEdgeState('switchyard-bench-pool', { onDisk: process.argv.includes('--edge-state-on-disk') });
let stack: Stack | undefined;
let model: Awaited<ReturnType<typeof spawnUrlProcess>> | undefined;
let proxy: Awaited<ReturnType<typeof spawnUrlProcess>> | undefined;
try {
  // The offline model behind bench/e2e's stamp proxy: a first delta's CLI part splits at the model.
  model = await spawnUrlProcess([OFFLINE_MODEL_BIN, '--port', '0']);
  proxy = await spawnUrlProcess([join(import.meta.dirname, '..', 'e2e', 'stamp-proxy.ts'), '--upstream', model.url]);
  const env: NodeJS.ProcessEnv = { ...process.env, SWITCHYARD_MODEL_URL: proxy.url };
  delete env.ANTHROPIC_API_KEY;
  delete env.SWITCHYARD_ADMIN_PASSWORD;
  stack = await startStack({
    port: 0,
    frozenEdge: true,
    devDir: join(dir, 'dev'),
    persistTo: state.dir,
    env,
    readyTimeoutMs: 240_000,
    provisionDelayMs: delayMs,
    // Hop stamps on (bench only): where a pooled first message's time goes, beside a warm turn's.
    // RUNNER_HUB_URL unset: a claimed runner dials the origin its session's first message came
    // through, so the straight pass's links go straight too.
    ...HOPS_ON,
    edgeVars: { ...HOPS_ON.edgeVars, RUNNER_HUB_URL: '' },
    output: () => undefined,
    log: () => undefined,
  });
  const api = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  console.log(
    `provision delay ${DELAY}, ${RUNS} run(s) per kind, pooled runners claimed ${claimAfterMs > 0 ? `${claimAfterMs} ms after they turned idle` : 'as soon as they are idle'}, edge state ${state.tmpfs ? 'on tmpfs' : 'on disk'}, ${new Date().toISOString()}`,
  );
  if (stack.edgeDirectUrl === undefined) throw new Error('the edge did not say where Miniflare serves the Worker');
  const direct = new Api(stack.edgeDirectUrl, api.token);
  for (const backend of BACKENDS) await benchBackend(stack, api, direct, backend, proxy.url);
} finally {
  await stack?.stop();
  model?.child.kill('SIGTERM');
  proxy?.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  rmSync(state.dir, { recursive: true, force: true });
}
