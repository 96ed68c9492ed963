// bench/e2e/floor: the platform's floor under a warm first delta. edge/bench/turn-floor.ts, served
// by its own wrangler dev (`unstable_startWorker`, the same two workerd processes as the stack's
// edge), takes a POSTed message through the Worker and a Durable Object to a WebSocket peer in this
// process that stands in for the runner and answers at once, and streams the answer back through
// the Worker's relay to an SSE client: the HTTP, RPC, WebSocket and SSE hops the app's first delta
// takes, with none of the app's own work (auth, D1, checks, the runner, its sandbox, the CLI). The
// same client code as the stack's (test/helpers' `Api` and `SseStream`).
//
// Used by bench/e2e/run.ts, which measures it in the same run as the stack and the bare CLI; on
// its own: node bench/e2e/floor.ts [--runs N]
import WebSocket from 'ws';
import { Api, SseStream, until } from '../../test/helpers/sse-client.ts';
import { startBenchWorker } from '../bench-worker.ts';
import { median } from '../stats.ts';

export type FloorWay = 'proxy' | 'direct';

export interface Floor {
  /** Warm first delta through the floor, ms, one per run (after one unmeasured turn). */
  measure(way: FloorWay, opts: { durable: boolean; runs: number }): Promise<number[]>;
  stop(): Promise<void>;
}

export async function startFloor(): Promise<Floor> {
  const worker = await startBenchWorker('turn-floor.toml');
  const bases: Record<FloorWay, string> = { proxy: worker.proxyUrl, direct: worker.directUrl };
  // The runner's stand-in, one a way, each linked through its way's URL as a runner dials the
  // origin its session's message came through: it answers each message with its text at once.
  const links = await Promise.all(
    (Object.keys(bases) as FloorWay[]).map(async (way) => {
      const link = new WebSocket(`${bases[way].replace(/^http/, 'ws')}/link?way=${way}`);
      link.on('message', (data) => link.send(data.toString()));
      await new Promise<void>((ok, fail) => {
        link.once('open', ok);
        link.once('error', fail);
      });
      return link;
    }),
  );
  // One viewer a way, open from its first measure to stop() (a closed one would linger in the
  // object until a send found it gone); each way's answers go to its own viewer only.
  const viewers = new Map<FloorWay, SseStream>();
  const viewer = async (way: FloorWay): Promise<SseStream> => {
    const open = viewers.get(way);
    if (open !== undefined) return open;
    const sse = await SseStream.open(`${bases[way]}/events?way=${way}`, {});
    if (sse.status !== 200) throw new Error(`floor /events: ${sse.status}`);
    viewers.set(way, sse);
    await until('the floor viewer', async () => {
      const r = await new Api(bases.direct).call<{ viewers: number }>('GET', '/count');
      return r.body.viewers === viewers.size;
    });
    return sse;
  };
  let turn = 0;
  return {
    async measure(way, { durable, runs }) {
      const api = new Api(bases[way]);
      const sse = await viewer(way);
      const times: number[] = [];
      for (let i = 0; i <= runs; i++) {
        const text = `floor turn ${turn++}`;
        const t0 = performance.now();
        const r = await api.call('POST', '/messages', { text, durable, way });
        if (r.status !== 202) throw new Error(`floor message: ${r.status} ${r.text}`);
        const delta = await sse.waitFor(text, (e) => e.event === 'text.delta' && e.data.text === text);
        if (i > 0) times.push(delta.receivedAt - t0);
      }
      return times;
    },
    async stop() {
      for (const sse of viewers.values()) await sse.close();
      for (const link of links) link.close();
      await worker.stop();
    },
  };
}

if (import.meta.filename === process.argv[1]) {
  const i = process.argv.indexOf('--runs');
  const runs = i >= 0 ? Number(process.argv[i + 1]) : 20;
  const floor = await startFloor();
  try {
    for (const way of ['proxy', 'direct'] as const)
      for (const durable of [false, true]) {
        const t = await floor.measure(way, { durable, runs });
        console.log(
          `floor, ${way === 'proxy' ? "through wrangler dev's proxy" : 'straight to the Worker'}${durable ? ', durable writes' : ''}: median ${median(t).toFixed(1)} ms (min ${Math.min(...t).toFixed(1)}, ${t.length} turns)`,
        );
      }
  } finally {
    await floor.stop();
  }
}
