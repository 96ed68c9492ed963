// Preloaded into a runner under test or bench (NODE_OPTIONS=--import): on SIGUSR2 it writes to
// SWITCHYARD_PROCESS_REPORT what /proc cannot show: the process's memoryUsage(); whether it
// loaded either of the two modules that cost the most memory for nothing (docs/DESIGN.md "Runner
// memory"): Node's TypeScript stripper (a module missing from the strip cache) and Node's bundled
// undici (a fetch, or an ES import of node:http, whose namespace runs http's lazy WebSocket getter);
// and the first processes it spawned: when (wall-clock ms), and the builtins it first loaded after
// changing V8's flags and before (compiled without their code cache, runner/bin/switchyard-runner.js).
// It loads nothing the runner would not have loaded by then itself: child_process only once the
// flags changed, so a builtin the bin failed to load before them still shows.
import { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import v8 from 'node:v8';

const path = process.env.SWITCHYARD_PROCESS_REPORT;
if (path) {
  /** process.moduleLoadList when V8's flags first changed. */
  let atFlags;
  const spawns = [];
  const setFlags = v8.setFlagsFromString;
  v8.setFlagsFromString = (flags) => {
    if (atFlags === undefined) {
      atFlags = new Set(process.moduleLoadList);
      const { ChildProcess } = process.getBuiltinModule('child_process');
      const spawn = ChildProcess.prototype.spawn;
      ChildProcess.prototype.spawn = function (options) {
        if (spawns.length < 5) {
          const builtinsAfterFlags = process.moduleLoadList.filter(
            (m) => m.startsWith('NativeModule ') && !atFlags.has(m),
          );
          spawns.push({ file: options.file, at: Date.now(), builtinsAfterFlags });
        }
        return spawn.call(this, options);
      };
    }
    setFlags(flags);
  };
  syncBuiltinESMExports();
  process.on('SIGUSR2', () => {
    const loaded = (name) => process.moduleLoadList.some((m) => m.includes(name));
    writeFileSync(
      path,
      JSON.stringify({ ...process.memoryUsage(), stripper: loaded('amaro'), undici: loaded('undici'), spawns }),
    );
  });
}
