// Fan-out, our code only: what the hub and a viewer's Worker spend per viewer per event, without
// workerd's sockets or wrangler's proxy (bench/e2e measures those, end to end). Two paths in the
// same run, on the same events:
//   baseline — the JSON viewer frame as it was before the binary frame, reconstructed here from
//              git history (edge/src/hub/viewer-frames.ts toViewerFrames and the message handler
//              of edge/src/sessions/sse.ts at eb3958b): the hub JSON.stringifies a batch once; each
//              viewer's Worker JSON.parses it, dedupes by id, builds the SSE text and TextEncodes it.
//   current  — edge/src/hub/viewer-frames.ts: the hub renders the SSE bytes once (toViewerFrames);
//              each viewer's Worker cuts them at its cursor (viewerFrameToSse).
// Per path: the hub's serialization per batch (once for all viewers), and the Worker's handler per
// viewer per batch, alone and with its write into a drained TransformStream (Node's streams, not
// workerd's: the write is the same call on both paths; only its synchronous part is counted, the
// reads that drain it run afterwards). CPU time of this process, not wall time (a shared machine). Batches of 1 and 10 text deltas, with
// and without bench hop stamps. Medians of rounds; ratio baseline / current.
// Run: npm run bench -- fanout   (or node bench/fanout/run.ts [--viewers 500] [--batches 200] [--rounds 7])
import { SSE_HOPS_COMMENT } from '@switchyard/protocol';
import { SseCursor, type StoredEvent, toViewerFrames, viewerFrameToSse } from '../../edge/src/hub/viewer-frames.ts';
import { median } from '../stats.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const VIEWERS = arg('--viewers', 500);
const BATCHES = arg('--batches', 200);
const ROUNDS = arg('--rounds', 7);

// ---- baseline, reconstructed from git history (eb3958b), for comparison only ----
interface BaselineFrame {
  events: StoredEvent[];
}
const BASELINE_MAX_FRAME_CHARS = 512 * 1024;
function baselineToViewerFrames(events: StoredEvent[]): string[] {
  const frames: string[] = [];
  let batch: StoredEvent[] = [];
  let size = 0;
  for (const e of events) {
    const n = e.data.length + e.id.length + e.type.length + 32;
    if (batch.length > 0 && size + n > BASELINE_MAX_FRAME_CHARS) {
      frames.push(JSON.stringify({ events: batch } satisfies BaselineFrame));
      batch = [];
      size = 0;
    }
    batch.push(e);
    size += n;
  }
  if (batch.length > 0) frames.push(JSON.stringify({ events: batch } satisfies BaselineFrame));
  return frames;
}
const baselineEncoder = new TextEncoder();
/** The Worker's message handler at eb3958b, less the presence branch (no presence in these frames). */
function baselineHandler(data: string, cursor: { last: string }): Uint8Array | null {
  let frame: BaselineFrame;
  try {
    frame = JSON.parse(data) as BaselineFrame;
  } catch {
    return null;
  }
  let out = '';
  for (const ev of frame.events) {
    if (ev.id <= cursor.last) continue;
    cursor.last = ev.id;
    if (ev.hops !== undefined)
      out += `: ${SSE_HOPS_COMMENT}${ev.id} ${JSON.stringify({ ...ev.hops, sse: Date.now() })}\n`;
    out += `id: ${ev.id}\nevent: ${ev.type}\ndata: ${ev.data}\n\n`;
  }
  return out === '' ? null : baselineEncoder.encode(out);
}
// ---- end of baseline ----

const currentOpts = { presence: false, now: Date.now };
function currentHandler(data: Uint8Array, cursor: SseCursor): Uint8Array | null {
  return viewerFrameToSse(data, cursor, currentOpts);
}

/** 26 ASCII characters that sort in the order of n, like the log's ULIDs. */
const ulid = (n: number) => `01JDZ${n.toString(32).toUpperCase().padStart(21, '0')}`;
const MID = ulid(999_999);

function batches(per: number, hops: boolean): StoredEvent[][] {
  const out: StoredEvent[][] = [];
  let n = 0;
  for (let b = 0; b < BATCHES; b++) {
    const batch: StoredEvent[] = [];
    for (let i = 0; i < per; i++, n++) {
      const t = Date.now();
      batch.push({
        id: ulid(n),
        type: 'text.delta',
        data: JSON.stringify({ type: 'text.delta', text: `word ${n} of the answer, `, messageId: MID }),
        ...(hops && {
          hops: {
            read: t,
            codec: t + 0.1,
            buffer: t + 0.2,
            sent: t + 0.3,
            hubIn: t + 1,
            hubStored: t + 1,
            hubSent: t + 1,
          },
        }),
      });
    }
    out.push(batch);
  }
  return out;
}

/** This process's CPU time (user + system), ms: the machine is shared, so wall time would count others' work. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** The hub serializes once per batch; repeated so the measured span is well above the clock's grain. */
const HUB_REPEAT = 50;
const us = (ms: number) => `${(ms * 1000).toFixed(2)} µs`;

/** One round of the Worker side: every viewer handles every frame; ms per viewer per event. */
function workerRound<F, C>(
  frames: F[],
  perBatch: number,
  cursor: () => C,
  handle: (f: F, c: C) => Uint8Array | null,
  sink: ((b: Uint8Array, v: number) => void) | null,
): number {
  const cursors = Array.from({ length: VIEWERS }, cursor);
  let bytes = 0;
  const t0 = cpuMs();
  for (const f of frames) {
    for (let v = 0; v < VIEWERS; v++) {
      const out = handle(f, cursors[v] as C);
      if (out !== null) {
        bytes += out.byteLength;
        sink?.(out, v);
      }
    }
  }
  const ms = cpuMs() - t0;
  if (bytes === 0) throw new Error('nothing written');
  return ms / (frames.length * perBatch * VIEWERS);
}

/** A drained TransformStream per viewer: what sseFromViewer writes into. */
function streams(): { write: (b: Uint8Array, v: number) => void; drain: () => Promise<void> } {
  const writers = Array.from({ length: VIEWERS }, () => {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const reader = readable.getReader();
    const pump = (async () => {
      for (;;) if ((await reader.read()).done) return;
    })();
    return { writer: writable.getWriter(), pump };
  });
  return {
    write: (b, v) => {
      writers[v]?.writer.write(b).catch(() => undefined);
    },
    drain: async () => {
      await Promise.all(writers.map((w) => w.writer.close()));
      await Promise.all(writers.map((w) => w.pump));
    },
  };
}

async function compare(per: number, hops: boolean): Promise<string[]> {
  const input = batches(per, hops);
  const hubBase: number[] = [];
  const hubCur: number[] = [];
  const wBase: number[] = [];
  const wCur: number[] = [];
  const wsBase: number[] = [];
  const wsCur: number[] = [];
  let baseFrames: string[] = [];
  let curFrames: Uint8Array[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = cpuMs();
    for (let k = 0; k < HUB_REPEAT; k++) baseFrames = input.flatMap((b) => baselineToViewerFrames(b));
    hubBase.push((cpuMs() - t0) / (input.length * HUB_REPEAT));
    t0 = cpuMs();
    for (let k = 0; k < HUB_REPEAT; k++) curFrames = input.flatMap((b) => toViewerFrames(b));
    hubCur.push((cpuMs() - t0) / (input.length * HUB_REPEAT));
    wBase.push(workerRound(baseFrames, per, () => ({ last: '' }), baselineHandler, null));
    wCur.push(workerRound(curFrames, per, () => new SseCursor(null), currentHandler, null));
    const sb = streams();
    wsBase.push(workerRound(baseFrames, per, () => ({ last: '' }), baselineHandler, sb.write));
    await sb.drain();
    const sc = streams();
    wsCur.push(workerRound(curFrames, per, () => new SseCursor(null), currentHandler, sc.write));
    await sc.drain();
  }
  const label = `${per} event${per > 1 ? 's' : ''} per batch${hops ? ', hop stamps on' : ''}`;
  const row = (what: string, b: number[], c: number[]) =>
    `    ${what.padEnd(58)} baseline ${us(median(b)).padStart(10)}  current ${us(median(c)).padStart(10)}  → ${(median(b) / median(c)).toFixed(1)}x less`;
  return [
    `${label}, ${VIEWERS} viewers, ${BATCHES} batches, median of ${ROUNDS} rounds:`,
    row('hub: serialize a batch (once for every viewer)', hubBase, hubCur),
    row('Worker: frame → SSE bytes, per viewer per event', wBase, wCur),
    row('Worker: frame → SSE bytes + stream write, per viewer per event', wsBase, wsCur),
  ];
}

console.log(`node ${process.version}; our code only (no workerd, no sockets, no wrangler proxy)`);
for (const [per, hops] of [
  [1, false],
  [10, false],
  [1, true],
] as const) {
  for (const line of await compare(per, hops)) console.log(line);
}
