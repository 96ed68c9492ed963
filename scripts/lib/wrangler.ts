import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');
export const WRANGLER_CONFIG = path.join(ROOT, 'wrangler.toml');
const WRANGLER_BIN = path.join(ROOT, 'node_modules', '.bin', 'wrangler');

/** Target database flags shared by the D1 scripts: local by default, `--remote` for production. */
export interface D1Target {
  remote: boolean;
  env?: string;
  persistTo?: string;
}

export function targetArgs(t: D1Target): string[] {
  const args = [t.remote ? '--remote' : '--local', '--config', WRANGLER_CONFIG];
  if (t.env !== undefined) args.push('--env', t.env);
  if (t.persistTo !== undefined) {
    if (t.remote) throw new Error('--persist-to only applies to the local database');
    args.push('--persist-to', path.resolve(t.persistTo));
  }
  return args;
}

/** Runs wrangler with the repo's config, output passed through; returns its exit status. */
export function wrangler(args: string[]): number {
  const res = spawnSync(WRANGLER_BIN, args, {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
  });
  if (res.error !== undefined) throw res.error;
  return res.status ?? 1;
}

/** `--name value` / `--flag` parsing for the few options these scripts take. */
export function parseArgs(argv: string[], spec: { values: string[]; flags: string[] }) {
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const name = arg.replace(/^--/, '');
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
    if (spec.flags.includes(name)) flags.add(name);
    else if (spec.values.includes(name)) {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
      values[name] = v;
      i += 1;
    } else throw new Error(`unknown option --${name}`);
  }
  return { values, flags };
}
