// bench/provider-errors: how long a user waits to learn what went wrong with the provider.
// For each error class and each CLI, `switchyard-runner once` (default sandbox, the runner's
// model proxy, the CLIs' default retry settings unless SWITCHYARD_CLI_RETRIES is set) runs one
// prompt whose every model request fails with that error (an `#offline` directive stays in the
// conversation, so each retry fails too). Printed: wall time from spawn to exit, the error code,
// retryable, the number of model requests, and the exit code.
// With --turn: the message → turn.done time alone on a started CLI (through the codec, no sandbox),
// retry settings from --retry N/BASE_MS (default 5/500, the runner's) or --retry cli.
// Run: node bench/provider-errors/run.ts [--turn [--retry cli|N/B]] [--backend claude|pi] [--class NAME] [--timeout 200s]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '@switchyard/protocol';
import { startOfflineModel } from '@switchyard/offline-model';
import { startCli } from '../../test/helpers/cli-harness.ts';

const RUNNER_BIN = join(import.meta.dirname, '..', '..', 'runner', 'bin', 'switchyard-runner.js');

const CLASSES: Array<{ name: string; script: Record<string, unknown> }> = [
  { name: 'auth 401', script: { error: 401 } },
  { name: 'auth 403', script: { error: 403 } },
  { name: 'billing 402', script: { error: 402 } },
  {
    name: 'billing 400 credit',
    script: {
      error: 400,
      message:
        'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
    },
  },
  { name: 'invalid 400', script: { error: 400 } },
  { name: 'rate 429', script: { error: 429 } },
  { name: 'overloaded 529', script: { error: 529 } },
  { name: 'unavailable 500', script: { error: 500 } },
];

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const backends = arg('--backend') ? [arg('--backend') as string] : ['claude', 'pi'];
const classes = CLASSES.filter((c) => !arg('--class') || c.name.startsWith(arg('--class') as string));
const timeout = arg('--timeout') ?? '200s';

const model = await startOfflineModel();

if (process.argv.includes('--turn')) {
  // Turn only: the CLI is started and warm (one answered message), then the failing message is
  // written; measured until its turn.done. Retry settings as the runner passes them: --retry N/B,
  // or --retry cli for the CLIs' own defaults (what the runner did before it had a default).
  const retryArg = arg('--retry') ?? '5/500';
  const [n, b] = retryArg.split('/').map(Number);
  const retry = retryArg === 'cli' ? undefined : { maxRetries: n ?? 5, baseDelayMs: b ?? 500 };
  console.log(
    `| backend | class | message → turn.done ms | code | retryable | turn.retry events | model requests | (retry ${retryArg}) |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const backend of backends as Backend[]) {
    for (const c of classes) {
      const h = await startCli(backend, model.url, { retry });
      h.proc.sendUserMessage({ text: `#offline ${JSON.stringify({ text: 'warm' })}` });
      await h.turn(1, 60_000);
      model.reset();
      const started = performance.now();
      h.proc.sendUserMessage({ text: `fail please\n#offline ${JSON.stringify(c.script)}` });
      const turn = await h.turn(2, 300_000);
      const ms = performance.now() - started;
      const done = turn.at(-1);
      const error = done?.type === 'turn.done' ? done.error : undefined;
      const retries = turn.filter((e) => e.type === 'turn.retry').length;
      const requests = model.requests().filter((r) => r.response?.mainTurn).length;
      console.log(
        `| ${backend} | ${c.name} | ${Math.round(ms)} | ${error?.code ?? '-'} | ${error?.retryable ?? '-'} | ${retries} | ${requests} | |`,
      );
      await h.close();
    }
  }
  await model.close();
  process.exit(0);
}

console.log('| backend | class | wall ms (spawn → exit) | code | retryable | model requests | exit |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const backend of backends) {
  for (const c of classes) {
    model.reset();
    const ws = mkdtempSync(join(tmpdir(), 'sy-bench-perr-'));
    const started = performance.now();
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          RUNNER_BIN,
          'once',
          '--backend',
          backend,
          '--prompt',
          `fail please\n#offline ${JSON.stringify(c.script)}`,
          '--workspace',
          ws,
          '--timeout',
          timeout,
        ],
        { env: { ...process.env, SWITCHYARD_MODEL_URL: model.url }, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      child.on('close', (exit) => resolve({ code: exit, stdout: out }));
    });
    const ms = performance.now() - started;
    rmSync(ws, { recursive: true, force: true });
    let error: { code?: string; retryable?: boolean; message?: string } = {};
    try {
      error = (JSON.parse(stdout.trim().split('\n')[0] ?? '{}') as { error?: typeof error }).error ?? {};
    } catch {
      error = { code: `unparsable: ${stdout.slice(0, 80)}` };
    }
    const requests = model.requests().filter((r) => r.response?.mainTurn).length;
    console.log(
      `| ${backend} | ${c.name} | ${Math.round(ms)} | ${error.code ?? '-'} | ${error.retryable ?? '-'} | ${requests} | ${code} |`,
    );
    if (process.argv.includes('--messages')) console.log(`|   | message | ${error.message ?? ''} | | | | |`);
  }
}
await model.close();
