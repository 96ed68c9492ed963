#!/usr/bin/env node
// Node >= 22.18 strips the types from the .ts source, so there is no build step.
// An older node on PATH would fail with a confusing ERR_UNKNOWN_FILE_EXTENSION.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `switchyard-offline-model needs Node >= 22.18 (found ${process.version}); run it through npm scripts or with node_modules/.bin on PATH\n`,
  );
  process.exit(1);
}
await import('../src/cli.ts');
