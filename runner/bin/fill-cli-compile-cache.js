#!/usr/bin/env node
// Fills Node's compile cache for pi (a CLI that runs on Node) in SWITCHYARD_CLI_COMPILE_CACHE: the
// image runs this at build time, as the runner's uid with its capabilities (as the ENTRYPOINT
// starts the runner), so that every session's pi reads its modules' compiled code instead of
// compiling them again (docs/DESIGN.md "Runner memory" → "The CLI's compile cache"). It is the
// runner that starts pi here, as serve starts it: a `once` turn against the offline model in the
// container sandbox, so pi runs as the CLI's uid with the flags and the environment it always gets;
// Node files the cache under that uid and V8's flags, and writes it when pi exits (a `once` turn
// closes pi's input, and pi exits by itself). The directory must be writable by the CLI's uid while
// this runs; the image then makes it root's and read-only.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOfflineModel } from '@switchyard/offline-model';
import { cacheDirFrom, requireEntries } from './compile-cache-dir.js';

const dir = cacheDirFrom('SWITCHYARD_CLI_COMPILE_CACHE', 'fill-cli-compile-cache');
const bundle = fileURLToPath(new URL('../dist/switchyard-runner.mjs', import.meta.url));
const workspace = mkdtempSync(join(tmpdir(), 'fill-cli-compile-cache-'));
const model = await startOfflineModel();
const run = await new Promise((resolve) => {
  const child = spawn(
    process.execPath,
    [bundle, 'once', '--backend', 'pi', '--prompt', 'hello', '--workspace', workspace],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SWITCHYARD_SANDBOX: process.env.SWITCHYARD_SANDBOX,
        SWITCHYARD_MODEL_URL: model.url,
        SWITCHYARD_CLI_COMPILE_CACHE: dir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.on('close', (code) => resolve({ code, out }));
});
await model.close();
rmSync(workspace, { recursive: true, force: true });
if (run.code !== 0) {
  process.stderr.write(`fill-cli-compile-cache: the runner's pi turn failed (exit ${run.code}):\n${run.out}\n`);
  process.exit(1);
}
const count = requireEntries(dir, 'fill-cli-compile-cache', 'pi');
process.stdout.write(`${count} of pi's modules' compiled code cached in ${dir}\n`);
