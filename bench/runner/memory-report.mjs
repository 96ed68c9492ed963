// Preloaded into the benchmarked runner (NODE_OPTIONS=--import): on SIGUSR2 it writes the
// process's own memoryUsage() to SWITCHYARD_BENCH_MEMORY_REPORT, which /proc cannot show, and
// whether Node's TypeScript stripper was loaded (a module missing from the strip cache).
import { writeFileSync } from 'node:fs';

const path = process.env.SWITCHYARD_BENCH_MEMORY_REPORT;
if (path)
  process.on('SIGUSR2', () => {
    const stripper = process.moduleLoadList.some((m) => m.includes('amaro'));
    writeFileSync(path, JSON.stringify({ ...process.memoryUsage(), stripper }));
  });
