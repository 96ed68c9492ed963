// A CLI started and timed to its readiness answer (pi: get_state response; claude: initialize
// control_response), as the runner's CLI slot waits for it: bench/runner's bare and walled CLIs
// and bench/image's bare CLI inside the image.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { adapterFor, type Backend, type SpawnSpec } from '@switchyard/protocol';
import { readinessFor } from '@switchyard/runner/cli';

/** Resolves when `pred(line)` holds for a stdout line of `child`. */
export function lineWhere(
  child: { stdout: NodeJS.ReadableStream | null },
  pred: (line: string) => boolean,
): Promise<void> {
  return new Promise((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      if (lines.some(pred)) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
  });
}

/** Writes `spec`'s files and creates its cwd, each at `hostPath(path)` (a path inside an image). */
export function writeSpecFiles(spec: SpawnSpec, hostPath: (path: string) => string = (p) => p): void {
  mkdirSync(hostPath(spec.cwd), { recursive: true });
  for (const f of spec.files) {
    mkdirSync(dirname(hostPath(f.path)), { recursive: true });
    writeFileSync(hostPath(f.path), f.content);
  }
}

/** A CLI with its stdin and stdout piped, its stderr ignored. */
export type PipedCli = ChildProcessByStdio<Writable, Readable, null>;

const spawnDirect = (spec: SpawnSpec): PipedCli =>
  spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'ignore'] });

/**
 * Starts `spec` (its files already written) with `start` (by default the spec's own command) and
 * resolves once the CLI answered its readiness handshake, with the time from the spawn.
 */
export async function spawnReady(
  backend: Backend,
  spec: SpawnSpec,
  start: (spec: SpawnSpec) => PipedCli = spawnDirect,
) {
  const codec = adapterFor(backend).createCodec();
  const readiness = readinessFor(backend, spec);
  const t0 = performance.now();
  const child = start(spec);
  const ready = lineWhere(
    child,
    (l) => readiness.isReady(l, undefined) || (backend === 'pi' && l.includes('"command":"get_state"')),
  );
  for (const line of [...codec.initLines(), ...readiness.lines]) child.stdin.write(line);
  await ready;
  return { child, codec, ms: performance.now() - t0 };
}
