#!/usr/bin/env node
// Node >= 22.18 strips the types from the .ts source, so there is no build step.
// An older node on PATH would fail with a confusing ERR_UNKNOWN_FILE_EXTENSION.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `switchyard-runner needs Node >= 22.18 (found ${process.version}); run it through npm scripts or with node_modules/.bin on PATH\n`,
  );
  process.exit(2);
}
// V8 takes a builtin module's code cache (compiled into the node binary) only under the flags it
// was made with: a builtin first loaded after the flags below change is compiled from source, about
// twice the time. So what `serve` loads before its CLI's spawn is loaded first, the way serve loads
// it (runner/test/bundle.test.ts holds this to that): ES imports, which also read each namespace's
// lazy exports (crypto's webcrypto); http without its namespace (runner/src/sandbox/credential-proxy.ts);
// net's cluster for a listen, util's parseArgs (runner/src/main.ts), the globals performance and
// navigator (zod reads it). What the runner loads later (the hub link's https, tls and zlib) is
// compiled beside the CLI's start.
const { registerStripCache } = await import('./strip-cache.js');
await Promise.all([
  import('node:child_process'),
  import('node:dns/promises'),
  import('node:fs/promises'),
  import('node:os'),
  import('node:timers/promises'),
]);
for (const name of ['cluster', 'http']) process.getBuiltinModule(name);
void [process.getBuiltinModule('util').parseArgs, globalThis.performance, globalThis.navigator];
// A small long-lived process that relays lines: no TurboFan (optimizing the modules' start-up
// code touched ~10 MiB of compiler pages and zone memory for no gain in a relay; the interpreter
// and Sparkplug remain), and a young generation that stays at its initial 1 MiB semi-spaces
// instead of growing to 8 MiB. Both are heuristics V8 reads at each decision, set before any of
// the runner's code runs (on the command line they would cost every builtin its code cache).
const { setFlagsFromString } = await import('node:v8');
setFlagsFromString('--no-opt');
setFlagsFromString('--semi-space-growth-factor=1');
// Caches compiled modules on disk, so a start does not compile them again (the bundle: ~15-20 ms
// before the CLI's spawn). A new task's /tmp is empty, so the image ships a cache filled at build
// time, read-only (SWITCHYARD_COMPILE_CACHE, runner/Dockerfile); elsewhere Node keeps it under
// TMPDIR. A no-op where the directory cannot be used.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.(process.env.SWITCHYARD_COMPILE_CACHE || undefined);
// Serves the runner's modules type-stripped from disk, so amaro (~30 MiB) is not loaded.
registerStripCache();
const { main } = await import('../src/main.ts');
const code = await main(process.argv.slice(2));
// stdout may be a pipe still draining the JSON answer; exit once it is flushed.
process.stdout.write('', () => process.exit(code));
