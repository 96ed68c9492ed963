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
// Caches compiled (type-stripped) modules on disk: about half the start-up
// time. A no-op where the cache directory is not writable.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
const { main } = await import('../src/main.ts');
const code = await main(process.argv.slice(2));
// stdout may be a pipe still draining the JSON answer; exit once it is flushed.
process.stdout.write('', () => process.exit(code));
