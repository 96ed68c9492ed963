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
// A small long-lived process that relays lines: no TurboFan (optimizing the modules' start-up
// code touched ~10 MiB of compiler pages and zone memory for no gain in a relay; the interpreter
// and Sparkplug remain), and a young generation that stays at its initial 1 MiB semi-spaces
// instead of growing to 8 MiB. Both are heuristics V8 reads at each decision, set before any of
// the runner's code runs; the same flags on the command line measure the same.
const { setFlagsFromString } = await import('node:v8');
setFlagsFromString('--no-opt');
setFlagsFromString('--semi-space-growth-factor=1');
// Caches compiled modules on disk: about half the start-up time. A no-op where the cache
// directory is not writable.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
// Serves the runner's modules type-stripped from disk, so amaro (~30 MiB) is not loaded.
const { registerStripCache } = await import('./strip-cache.js');
registerStripCache();
const { main } = await import('../src/main.ts');
const code = await main(process.argv.slice(2));
// stdout may be a pipe still draining the JSON answer; exit once it is flushed.
process.stdout.write('', () => process.exit(code));
