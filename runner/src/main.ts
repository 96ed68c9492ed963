import { BackendSchema, type Backend } from '@switchyard/protocol';
import { loadCommonConfig, parseDuration } from './config.ts';
import { ExitCode } from './errors.ts';
import type { OnceResult } from './once.ts';

// Not an ES import: that builds node:util's namespace, which loads every module behind its lazy
// exports (~10 ms before a runner can spawn its CLI). The CommonJS exports object does not.
const { parseArgs } = process.getBuiltinModule('node:util');

const USAGE = `usage:
  switchyard-runner serve                      hold one session's CLI for the hub (configured by environment)
  switchyard-runner once --backend claude|pi --prompt TEXT [--workspace DIR] [--timeout 10m]
  switchyard-runner probe [--backend claude|pi]
  switchyard-runner host [--port N] [--state-dir DIR] [--stop-timeout 30s] [--cluster NAME] [--provision-delay 30s]
                                               local ECS API stand-in: each task is a runner process

exit codes: 0 ok, 1 failed, 2 usage/configuration, 3 refused by the hub, 4 event buffer overflow
`;

export async function main(argv: string[]): Promise<number> {
  const [mode, ...rest] = argv;
  switch (mode) {
    case 'serve':
      if (rest.length > 0)
        return usage(`serve takes no arguments (got ${rest.join(' ')}); it is configured by environment`);
      return (await import('./serve/lifecycle.ts')).serve(process.env);
    case 'once':
      return once(rest);
    case 'probe':
      return probeMode(rest);
    case 'host':
      return hostMode(rest);
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return ExitCode.ok;
    default:
      return usage(mode ? `unknown mode ${JSON.stringify(mode)}` : 'no mode given');
  }
}

async function once(args: string[]): Promise<number> {
  const parsed = safeParseArgs(args, {
    backend: { type: 'string' },
    prompt: { type: 'string' },
    workspace: { type: 'string' },
    timeout: { type: 'string' },
  });
  // Every outcome of `once`, bad arguments included, is one JSON object on stdout.
  const fail = (message: string): number => {
    printJson({
      ok: false,
      text: '',
      stopReason: null,
      error: { code: 'usage', message, retryable: false },
    } satisfies OnceResult);
    return ExitCode.usage;
  };
  if (!parsed.ok) return fail(parsed.message);
  const v = parsed.values;
  const backend = BackendSchema.safeParse(v.backend);
  if (!backend.success) return fail('--backend must be claude or pi');
  if (typeof v.prompt !== 'string' || v.prompt.length === 0) return fail('--prompt TEXT is required');
  const timeoutMs = typeof v.timeout === 'string' ? parseDuration(v.timeout) : 600_000;
  if (timeoutMs === undefined || timeoutMs <= 0) return fail('--timeout must be a duration such as 90s or 10m');
  const config = loadCommonConfig(process.env);
  if (!config.ok) return fail(config.error.message);
  const { runOnce } = await import('./once.ts');
  const result = await runOnce({
    backend: backend.data,
    prompt: v.prompt,
    workspace: typeof v.workspace === 'string' ? v.workspace : process.cwd(),
    timeoutMs,
    config: config.value,
    baseEnv: process.env,
  });
  printJson(result);
  return result.ok ? ExitCode.ok : ExitCode.failed;
}

async function probeMode(args: string[]): Promise<number> {
  const parsed = safeParseArgs(args, { backend: { type: 'string' } });
  if (!parsed.ok) return usage(parsed.message);
  let backends: Backend[] = ['claude', 'pi'];
  if (parsed.values.backend !== undefined) {
    const b = BackendSchema.safeParse(parsed.values.backend);
    if (!b.success) return usage('--backend must be claude or pi');
    backends = [b.data];
  }
  const config = loadCommonConfig(process.env);
  if (!config.ok) return usage(config.error.message);
  const { probe } = await import('./probe.ts');
  const report = await probe(backends, config.value, process.env);
  printJson(report);
  return report.ok ? ExitCode.ok : ExitCode.failed;
}

/** The local runner host is development-only: the production image leaves `host/` out. */
async function hostMode(args: string[]): Promise<number> {
  let mod: typeof import('./host/cli.ts');
  try {
    mod = await import('./host/cli.ts');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ERR_MODULE_NOT_FOUND' || !e.message.includes('/host/cli.ts')) throw err;
    return usage('host mode is not in this install (the runner image leaves the local runner host out)');
  }
  return mod.hostMode(args);
}

type Options = Record<string, { type: 'string' | 'boolean' }>;

function safeParseArgs(
  args: string[],
  options: Options,
): { ok: true; values: Record<string, string | boolean | undefined> } | { ok: false; message: string } {
  try {
    const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
    return { ok: true, values: values as Record<string, string | boolean | undefined> };
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

function usage(message: string): number {
  process.stderr.write(`switchyard-runner: ${message}\n${USAGE}`);
  return ExitCode.usage;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
