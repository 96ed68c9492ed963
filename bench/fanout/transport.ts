// bench/fanout/transport: what feeding SSE viewers from the session's Durable Object itself would
// save against the edge's way (the Worker invocation relays a hibernatable WebSocket's frames into
// the SSE response; docs/DESIGN.md "Session hub decisions" → "Fan-out cost"), in one workerd, in
// one run. edge/bench/sse-transport.ts has both, with the edge's own frames and relay and none of
// the rest of the app (no auth, no log, no replay).
//
// For each viewer count and each way, `--rounds` times, alternating: N SSE clients connect
// (straight to Miniflare's socket, no wrangler dev proxy), the object sends `--deltas` one-delta
// frames `--pace` ms apart, and the bench reads workerd's CPU (/proc, both workerd processes) over
// the burst and each delivery's latency (receipt − the send time stamped in the frame; one clock,
// one machine; workerd's clock reads whole milliseconds, so a latency reads up to 1 ms long).
// Prints workerd CPU per delivery and p50/p99 per way, their ratios, each way's p99 with the most
// viewers against the fewest, and what one more viewer costs workerd.
//
// Run: node bench/fanout/transport.ts [--viewers 1,50] [--deltas 400] [--pace 20] [--rounds 3]
import { descendants } from '@switchyard/runner/host';
import { startBenchWorker } from '../bench-worker.ts';
import { comm, cpuMs } from '../procfs.ts';
import { median, quantile } from '../stats.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
};
const VIEWERS = arg('--viewers', '1,50').split(',').map(Number);
const DELTAS = Number(arg('--deltas', '400'));
const PACE_MS = Number(arg('--pace', '20'));
const ROUNDS = Number(arg('--rounds', '3'));
const WAYS = ['socket', 'stream'] as const;
type Way = (typeof WAYS)[number];
const LABEL: Record<Way, string> = {
  socket: 'Worker relays a hibernatable WebSocket (the edge today)',
  stream: 'the Durable Object writes the SSE response itself',
};

function workerdPids(): number[] {
  return descendants(process.pid)
    .map((p) => p.pid)
    .filter((pid) => comm(pid) === 'workerd');
}

interface Round {
  cpuUsPerDelivery: number;
  latencies: number[];
}

async function round(base: string, way: Way, viewers: number, pids: number[]): Promise<Round> {
  const aborts: AbortController[] = [];
  const latencies: number[] = [];
  const finished: Promise<number>[] = [];
  for (let i = 0; i < viewers; i++) {
    const abort = new AbortController();
    aborts.push(abort);
    const res = await fetch(`${base}/events/${way}`, { signal: abort.signal });
    if (res.body === null) throw new Error(`no body from /events/${way}`);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    finished.push(
      (async () => {
        let got = 0;
        let buffered = '';
        while (got < DELTAS) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`a ${way} viewer's stream ended after ${got} of ${DELTAS} deltas`);
          buffered += decoder.decode(value, { stream: true });
          for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
            const sent = /"sentAt":(\d+)/.exec(buffered.slice(0, end));
            buffered = buffered.slice(end + 2);
            if (sent === null) continue;
            latencies.push(performance.timeOrigin + performance.now() - Number(sent[1]));
            got++;
          }
        }
        return got;
      })(),
    );
  }
  const count = async () => ((await (await fetch(`${base}/count`)).json()) as { viewers: number }).viewers;
  while ((await count()) < viewers) await new Promise((r) => setTimeout(r, 10));
  const cpu = () => pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const before = cpu();
  await (await fetch(`${base}/burst?n=${DELTAS}&pace=${PACE_MS}`)).text();
  await Promise.all(finished);
  const cpuUsPerDelivery = ((cpu() - before) * 1000) / (viewers * DELTAS);
  for (const a of aborts) a.abort();
  // A gone client is noticed at the next write to it: send until every viewer has been let go.
  while ((await count()) > 0) {
    await (await fetch(`${base}/burst?n=1&pace=0`)).text();
    await new Promise((r) => setTimeout(r, 20));
  }
  return { cpuUsPerDelivery, latencies };
}

async function main(): Promise<void> {
  const worker = await startBenchWorker('sse-transport.toml');
  try {
    const base = worker.directUrl;
    const pids = workerdPids();
    console.log(
      `bench/fanout/transport: ${DELTAS} deltas ${PACE_MS} ms apart, ${ROUNDS} rounds a way, viewers ${VIEWERS.join(', ')}; workerd pids ${pids.join(', ')}; straight to Miniflare (${base})`,
    );
    /** Per viewer count and way: workerd's CPU over a whole round (ms, from the median round) and the p99. */
    const byCount = new Map<number, Record<Way, { roundCpuMs: number; p99: number }>>();
    for (const viewers of VIEWERS) {
      const rounds: Record<Way, Round[]> = { socket: [], stream: [] };
      for (let r = 0; r < ROUNDS; r++) for (const way of WAYS) rounds[way].push(await round(base, way, viewers, pids));
      const summary = (way: Way) => {
        const all = rounds[way].flatMap((x) => x.latencies);
        return {
          cpu: median(rounds[way].map((x) => x.cpuUsPerDelivery)),
          p50: quantile(all, 0.5),
          p99: quantile(all, 0.99),
          p99s: rounds[way].map((x) => quantile(x.latencies, 0.99)),
        };
      };
      const s = { socket: summary('socket'), stream: summary('stream') };
      console.log(`\n${viewers} viewer(s), ${viewers * DELTAS} deliveries a round:`);
      for (const way of WAYS)
        console.log(
          `  ${LABEL[way].padEnd(56)} workerd CPU ${s[way].cpu.toFixed(1).padStart(6)} µs a delivery (median of rounds); latency p50 ${s[way].p50.toFixed(1)} ms, p99 ${s[way].p99.toFixed(1)} ms (rounds: ${s[way].p99s.map((x) => x.toFixed(1)).join(', ')})`,
        );
      const whole = (way: Way) => ({ roundCpuMs: (s[way].cpu * viewers * DELTAS) / 1000, p99: s[way].p99 });
      byCount.set(viewers, { socket: whole('socket'), stream: whole('stream') });
      console.log(
        `  socket / stream: CPU a delivery ${(s.socket.cpu / s.stream.cpu).toFixed(2)}×, p99 ${(s.socket.p99 / s.stream.p99).toFixed(2)}×`,
      );
    }
    const [fewest, most] = [Math.min(...VIEWERS), Math.max(...VIEWERS)];
    const low = byCount.get(fewest);
    const high = byCount.get(most);
    if (low !== undefined && high !== undefined && most > fewest) {
      const p99Ratio = (way: Way) => (high[way].p99 / low[way].p99).toFixed(2);
      // What one more viewer costs, without the round's fixed part (the object's loop, its timers).
      const extra = (way: Way) => ((high[way].roundCpuMs - low[way].roundCpuMs) * 1000) / ((most - fewest) * DELTAS);
      console.log(
        `\np99 with ${most} viewers against ${fewest}: socket ${p99Ratio('socket')}×, stream ${p99Ratio('stream')}×`,
      );
      console.log(
        `workerd CPU of one more viewer per delta (${fewest} → ${most} viewers): socket ${extra('socket').toFixed(1)} µs, stream ${extra('stream').toFixed(1)} µs (${(extra('socket') / extra('stream')).toFixed(2)}×)`,
      );
    }
  } finally {
    await worker.stop();
  }
}

await main();
