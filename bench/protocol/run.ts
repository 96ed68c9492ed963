// Codec parse throughput on a large stream recorded from the real CLIs, as a
// ratio to bare JSON.parse of the same lines in the same run.
import { adapterFor, type Backend } from '@switchyard/protocol';
import { startOfflineModel } from '@switchyard/offline-model';
import { startCli } from '../../test/helpers/cli-harness.ts';
import { median } from '../stats.ts';

const TARGET_LINES = Number(process.env.BENCH_LINES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

async function record(backend: Backend, modelUrl: string): Promise<string[]> {
  const h = await startCli(backend, modelUrl);
  const script = {
    thinking: 'Considering the request. '.repeat(40),
    text: 'Streaming answer words. '.repeat(400),
    chunks: 800,
  };
  h.proc.sendUserMessage({ text: `#offline ${JSON.stringify(script)}` });
  await h.turn(1, 120_000);
  h.proc.sendUserMessage({
    text: `#offline ${JSON.stringify({ tool: 'shell', command: 'seq 1 200', text: 'Running it.', chunks: 50 })}`,
  });
  await h.turn(2, 120_000);
  const lines = [...h.stdout];
  await h.close();
  return lines;
}

function measure(backend: Backend, recorded: string[]) {
  const lines: string[] = [];
  while (lines.length < TARGET_LINES) lines.push(...recorded);
  lines.length = TARGET_LINES;
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
  const bare: number[] = [];
  const codecTimes: number[] = [];
  let sink = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let t = performance.now();
    for (const l of lines) sink += JSON.parse(l) === null ? 0 : 1;
    bare.push(performance.now() - t);
    const codec = adapterFor(backend).createCodec();
    t = performance.now();
    for (let i = 0; i < lines.length; i++) {
      if (i % recorded.length === 0) codec.encodeUserMessage({ text: 'bench' });
      sink += codec.parse(lines[i] as string).length;
    }
    codecTimes.push(performance.now() - t);
  }
  const b = median(bare);
  const c = median(codecTimes);
  return {
    backend,
    lines: lines.length,
    mb: bytes / 1e6,
    bareMs: b,
    codecMs: c,
    ratio: c / b,
    codecMBps: bytes / 1e6 / (c / 1000),
    sink,
  };
}

const model = await startOfflineModel();
try {
  console.log(
    `bench/protocol: ${TARGET_LINES} lines per backend, median of ${ROUNDS} rounds (target: codec <= 1.5x JSON.parse)`,
  );
  for (const backend of ['claude', 'pi'] as const) {
    const recorded = await record(backend, model.url);
    const r = measure(backend, recorded);
    console.log(
      `${backend.padEnd(6)} recorded ${recorded.length} real lines, ${r.lines} lines / ${r.mb.toFixed(1)} MB: ` +
        `JSON.parse ${r.bareMs.toFixed(0)} ms, codec ${r.codecMs.toFixed(0)} ms, ratio ${r.ratio.toFixed(2)}x, codec ${r.codecMBps.toFixed(0)} MB/s`,
    );
  }
} finally {
  await model.close();
}
