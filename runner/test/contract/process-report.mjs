// Preloaded into a runner under test or bench (NODE_OPTIONS=--import): on SIGUSR2 it writes to
// SWITCHYARD_PROCESS_REPORT what /proc cannot show: the process's memoryUsage(); whether it
// loaded either of the two modules that cost the most memory for nothing (docs/DESIGN.md "Runner
// memory"): Node's TypeScript stripper (a module missing from the strip cache) and Node's bundled
// undici (a fetch, or an ES import of node:http, whose namespace runs http's lazy WebSocket getter);
// and, for each of the first processes it spawned, the builtins it first loaded after changing V8's
// flags and before that spawn (compiled without their code cache, runner/bin/switchyard-runner.js).
import { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import v8 from 'node:v8';

const path = process.env.SWITCHYARD_PROCESS_REPORT;
if (path) {
  /** process.moduleLoadList when V8's flags first changed. */
  let atFlags;
  const setFlags = v8.setFlagsFromString;
  v8.setFlagsFromString = (flags) => {
    atFlags ??= new Set(process.moduleLoadList);
    setFlags(flags);
  };
  syncBuiltinESMExports();
  const spawns = [];
  const spawn = ChildProcess.prototype.spawn;
  ChildProcess.prototype.spawn = function (options) {
    if (spawns.length < 5) {
      const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ') && !atFlags?.has(m));
      spawns.push({ file: options.file, builtinsAfterFlags: atFlags === undefined ? [] : builtins });
    }
    return spawn.call(this, options);
  };
  process.on('SIGUSR2', () => {
    const loaded = (name) => process.moduleLoadList.some((m) => m.includes(name));
    writeFileSync(
      path,
      JSON.stringify({ ...process.memoryUsage(), stripper: loaded('amaro'), undici: loaded('undici'), spawns }),
    );
  });
}
