import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '@switchyard/protocol';

export interface CliExecutable {
  command: string;
  prefixArgs: string[];
  version: string;
}

/** The pinned CLIs ship as dependencies of this package; resolve them from here. */
export function locateCli(backend: Backend): CliExecutable {
  if (backend === 'claude') {
    const dir = packageDir('@anthropic-ai/claude-code');
    return { command: join(dir, 'bin', 'claude.exe'), prefixArgs: [], version: readVersion(dir) };
  }
  const dir = packageDir('@mariozechner/pi-coding-agent');
  // pi is a Node script; run it with the same Node 22 that runs the runner.
  return { command: process.execPath, prefixArgs: [join(dir, 'dist', 'cli.js')], version: readVersion(dir) };
}

// Node's resolver cannot be used: pi's `exports` hide package.json, and the
// claude package's entry is a native binary. Walk node_modules like Node does.
function packageDir(name: string): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} is not installed (run npm install)`);
  }
}

function readVersion(dir: string): string {
  const pkg: unknown = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string'
    ? pkg.version
    : 'unknown';
}
