import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Backend } from '@switchyard/protocol';

const require = createRequire(import.meta.url);

export interface CliExecutable {
  command: string;
  prefixArgs: string[];
  version: string;
}

/** The pinned CLIs ship as dependencies of this package; resolve them from here. */
export function locateCli(backend: Backend): CliExecutable {
  if (backend === 'claude') {
    const pkg = require.resolve('@anthropic-ai/claude-code/package.json');
    return { command: join(dirname(pkg), 'bin', 'claude.exe'), prefixArgs: [], version: readVersion(pkg) };
  }
  const pkg = require.resolve('@mariozechner/pi-coding-agent/package.json');
  return { command: process.execPath, prefixArgs: [join(dirname(pkg), 'dist', 'cli.js')], version: readVersion(pkg) };
}

function readVersion(pkgJsonPath: string): string {
  const pkg: unknown = require(pkgJsonPath);
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string' ? pkg.version : 'unknown';
}
