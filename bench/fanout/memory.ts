// Where a viewer's workerd memory goes, and whether it comes back: one stack (frozen edge, the
// DevTools inspector on a loopback port so the Worker isolate's JS heap can be read and collected),
// one idle session; `--rounds` times: open `--viewers` SSE viewers, close them, wait until RSS
// settles, then force a full GC in the Worker isolate through the inspector. Prints each workerd
// process's RSS and the isolate's JS heap at every step: memory that drops after the GC was
// garbage, memory that stays at the same level round after round is kept for reuse, memory that
// climbs round after round is held by something. `--direct`: the viewers connect to Miniflare's
// own socket instead of through `wrangler dev`'s proxy (a deployed edge has no such proxy), which
// shows whether a client's close reaches the Worker without it. `--allocator` (needs gdb): also
// prints what workerd's allocator says it holds (in use by workerd, and freed but kept) at every
// step, and at the end asks it to return its free pages to the OS (./tcmalloc.ts).
// `--requests healthz|read`: the control, each round makes that many plain requests instead of
// opening viewers (`GET /healthz`: none of the session code; `read`: `GET /api/sessions/:id`, the
// token and the session read from D1), to tell what workerd keeps of any request from what it
// keeps of a viewer.
// Run: node bench/fanout/memory.ts [--viewers 500] [--rounds 3] [--direct] [--allocator]
//      [--requests healthz|read]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { liveInGroups } from '@switchyard/runner/host';
import { throwawayEdgeState } from '../edge-state.ts';
import { freePort, startStack, type Stack } from '../../scripts/lib/stack.ts';
import { Api, type SseStream } from '../../test/helpers/sse-client.ts';
import { comm, rssKb } from '../procfs.ts';
import { allocatorStats, releaseFreeMemory } from './tcmalloc.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const VIEWERS = arg('--viewers', 500);
const ROUNDS = arg('--rounds', 3);
const DIRECT = process.argv.includes('--direct');
const ALLOCATOR = process.argv.includes('--allocator');
const REQUESTS = (() => {
  const i = process.argv.indexOf('--requests');
  if (i < 0) return null;
  const kind = process.argv[i + 1];
  if (kind !== 'healthz' && kind !== 'read') throw new Error('--requests takes healthz or read');
  return kind;
})();

const rssMiB = (pid: number) => rssKb(pid) / 1024;

/** A DevTools protocol session with the Worker isolate. */
class Inspector {
  #ws: WebSocket;
  #id = 0;
  #pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.addEventListener('message', (e) => {
      const m = JSON.parse(String(e.data)) as { id?: number; result?: unknown };
      if (m.id === undefined) return;
      this.#pending.get(m.id)?.resolve(m.result);
      this.#pending.delete(m.id);
    });
    ws.addEventListener('close', (e) => {
      for (const p of this.#pending.values()) p.reject(new Error(`the inspector's socket closed (${e.code})`));
      this.#pending.clear();
    });
  }
  static async open(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Array<{
      webSocketDebuggerUrl: string;
    }>;
    const url = targets[0]?.webSocketDebuggerUrl;
    if (url === undefined) throw new Error('no inspector target');
    // wrangler's inspector proxy wants an Origin on the upgrade; Node's WebSocket takes headers in its init.
    const init = { headers: { Origin: 'http://127.0.0.1' } } as unknown as string[];
    const ws = new WebSocket(url, init);
    await new Promise((res, rej) => {
      ws.addEventListener('open', res);
      ws.addEventListener('error', rej);
    });
    return new Inspector(ws);
  }
  call<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.#id;
    this.#ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) =>
      this.#pending.set(id, { resolve: resolve as (r: unknown) => void, reject }),
    );
  }
  async heapMiB(): Promise<number> {
    return (await this.call<{ usedSize: number }>('Runtime.getHeapUsage')).usedSize / 2 ** 20;
  }
  close(): void {
    this.#ws.close();
  }
}

/** How many viewer sockets the hub still counts: one more viewer, asking for presence, reads it. */
async function hubStreams(api: Api, sessionId: string): Promise<number> {
  const res = await fetch(`${api.base}/api/sessions/${sessionId}/events?presence=1`, { headers: api.headers() });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended before presence');
      text += dec.decode(value, { stream: true });
      const m = /event: presence\ndata: (.*)\n/.exec(text);
      if (m) {
        const p = JSON.parse(m[1] as string) as { viewers: Array<{ streams: number }> };
        return p.viewers.reduce((a, v) => a + v.streams, 0) - 1;
      }
    }
  } finally {
    await reader.cancel();
  }
}

async function settle(pids: number[]): Promise<void> {
  let prev = pids.map(rssMiB);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const cur = pids.map(rssMiB);
    if (cur.every((m, j) => Math.abs(m - (prev[j] ?? 0)) < 1)) return;
    prev = cur;
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-fanout-mem-'));
  const state = throwawayEdgeState('switchyard-bench-fanout-mem');
  const inspectorPort = await freePort();
  let stack: Stack | undefined;
  let inspector: Inspector | undefined;
  try {
    stack = await startStack({
      port: 0,
      frozenEdge: true,
      devDir: join(dir, 'dev'),
      persistTo: state.dir,
      inspectorPort,
      readyTimeoutMs: 240_000,
      output: () => {},
      log: () => {},
    });
    const login = await Api.login(stack.url, stack.admin.username, stack.admin.password);
    if (DIRECT && stack.edgeDirectUrl === undefined)
      throw new Error('the edge did not say where Miniflare serves the Worker');
    const api = DIRECT ? new Api(stack.edgeDirectUrl as string, login.token) : login;
    console.log(
      `${REQUESTS === null ? 'viewers connect' : 'requests go'} ${DIRECT ? "straight to the Worker (Miniflare's own socket)" : "through wrangler dev's proxy"}`,
    );
    const groups = new Set(stack.services.find((s) => s.name === 'edge')?.groups ?? []);
    const pids = liveInGroups(groups)
      .filter((p) => comm(p.pid) === 'workerd')
      .map((p) => p.pid);
    inspector = await Inspector.open(inspectorPort);
    const ins = inspector;
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    const allocator = (pid: number) => {
      if (!ALLOCATOR) return '';
      const a = allocatorStats(pid);
      return ` (in use ${mib(a.inUse)}, freed and kept ${mib(a.pageHeapFree)})`;
    };
    const line = async (what: string) =>
      console.log(
        `${what.padEnd(44)} workerd RSS MiB ${pids.map((p) => `[${p}] ${rssMiB(p).toFixed(1)}${allocator(p)}`).join(' ')}; Worker isolate JS heap ${(await ins.heapMiB()).toFixed(1)} MiB`,
      );
    const s = (await api.call<{ id: string }>('POST', '/api/sessions', { title: 'viewer memory' })).body;
    await line('start');
    const healthz = async () => void (await (await fetch(`${api.base}/healthz`)).arrayBuffer());
    /** `VIEWERS` calls of `make`, 50 at a time. */
    const inFifties = async <T>(make: () => Promise<T>): Promise<T[]> => {
      const all: T[] = [];
      for (let i = 0; i < VIEWERS; i += 50)
        all.push(...(await Promise.all(Array.from({ length: Math.min(50, VIEWERS - i) }, make))));
      return all;
    };
    const requestRound = async (r: number) => {
      const t0 = performance.now();
      await inFifties(REQUESTS === 'read' ? () => api.call('GET', `/api/sessions/${s.id}`) : healthz);
      await line(`round ${r}: ${VIEWERS} × ${REQUESTS} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    };
    const viewerRound = async (r: number) => {
      const t0 = performance.now();
      const viewers: SseStream[] = await inFifties(() => api.events(s.id));
      await line(`round ${r}: ${VIEWERS} viewers open in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      await Promise.all(viewers.map((v) => v.close()));
      const closedAt = performance.now();
      await settle(pids);
      await line(`round ${r}: closed, settled (the hub counts ${await hubStreams(api, s.id)} viewer sockets)`);
      // How long the hub keeps a closed client's socket: until its Worker notices the client left.
      let left = await hubStreams(api, s.id);
      while (left > 0 && performance.now() - closedAt < 60_000) {
        await new Promise((res) => setTimeout(res, 1000));
        left = await hubStreams(api, s.id);
      }
      await line(
        `round ${r}: the hub counts ${left} viewer sockets ${((performance.now() - closedAt) / 1000).toFixed(1)} s after the close`,
      );
    };
    for (let r = 1; r <= ROUNDS; r++) {
      await (REQUESTS === null ? viewerRound(r) : requestRound(r));
      // workerd takes the inspector's GC only when the isolate next runs (an SSE stream still open
      // in it was enough); a request alongside makes it run.
      await Promise.all([ins.call('HeapProfiler.collectGarbage'), healthz()]);
      await settle(pids);
      await line(`round ${r}: after a full GC in the Worker isolate`);
    }
    if (ALLOCATOR) {
      for (const p of pids) releaseFreeMemory(p);
      await line("after the allocator's release to the OS");
    }
    await api.call('DELETE', `/api/sessions/${s.id}`);
  } finally {
    inspector?.close();
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(state.dir, { recursive: true, force: true });
  }
}

await main();
