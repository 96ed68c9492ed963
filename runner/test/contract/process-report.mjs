// Preloaded into a runner under test or bench (NODE_OPTIONS=--import): on SIGUSR2 it writes to
// SWITCHYARD_PROCESS_REPORT what /proc cannot show: the process's memoryUsage(), and whether it
// loaded either of the two modules that cost the most memory for nothing (docs/DESIGN.md "Runner
// memory"): Node's TypeScript stripper (a module missing from the strip cache) and Node's bundled
// undici (a fetch, or an ES import of node:http, whose namespace runs http's lazy WebSocket getter).
import { writeFileSync } from 'node:fs';

const path = process.env.SWITCHYARD_PROCESS_REPORT;
if (path)
  process.on('SIGUSR2', () => {
    const loaded = (name) => process.moduleLoadList.some((m) => m.includes(name));
    writeFileSync(
      path,
      JSON.stringify({ ...process.memoryUsage(), stripper: loaded('amaro'), undici: loaded('undici') }),
    );
  });
