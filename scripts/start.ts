// `npm start`: the whole stack on loopback — the edge under `wrangler dev` (local D1/DO/R2 in
// .wrangler/state, migrations applied), the local runner host, and the offline model unless
// ANTHROPIC_API_KEY or SWITCHYARD_MODEL_URL is set. Ctrl-C (SIGINT) or SIGTERM stops all of it.
// The e2e tests start the same stack with startStack() (scripts/lib/stack.ts).
import { fileURLToPath } from 'node:url';
import { startStack, type Stack } from './lib/stack.ts';

export { freePort, startStack } from './lib/stack.ts';
export type { Stack, StackOptions } from './lib/stack.ts';

async function main(): Promise<number> {
  const abort = new AbortController();
  let stack: Stack | undefined;
  let shuttingDown: Promise<number> | undefined;
  let finished!: (code: number) => void;
  const done = new Promise<number>((r) => (finished = r));
  const shutdown = (why: string, code: number): Promise<number> => {
    shuttingDown ??= (async () => {
      process.stderr.write(`\n${why}: stopping the runner host (and its runners), the edge and the model ...\n`);
      abort.abort();
      await stack?.stop();
      process.stderr.write('all stopped\n');
      return code;
    })();
    void shuttingDown.then(finished);
    return shuttingDown;
  };
  let firstSignalAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    // Ctrl-C under `npm start` arrives twice (the terminal signals the whole foreground group,
    // and npm forwards it), so only a later, deliberate second Ctrl-C means "stop waiting"
    // (the 'exit' handler then SIGKILLs every service group).
    if (firstSignalAt !== undefined) {
      if (Date.now() - firstSignalAt > 2_000) process.exit(130);
      return;
    }
    firstSignalAt = Date.now();
    void shutdown(signal, 0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    stack = await startStack({
      signal: abort.signal,
      // Where the dev state lives (defaults: .switchyard and .wrangler/state in the repo); tests
      // point these at temporary directories.
      ...(process.env.SWITCHYARD_DEV_DIR && { devDir: process.env.SWITCHYARD_DEV_DIR }),
      ...(process.env.SWITCHYARD_PERSIST_TO && { persistTo: process.env.SWITCHYARD_PERSIST_TO }),
      frozenEdge: process.env.SWITCHYARD_FROZEN_EDGE === '1',
      // A DevTools inspector for the edge only when asked for (anything on loopback could use it).
      ...(process.env.SWITCHYARD_INSPECTOR_PORT && { inspectorPort: Number(process.env.SWITCHYARD_INSPECTOR_PORT) }),
    });
  } catch (err) {
    if (shuttingDown) return shuttingDown;
    process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  if (shuttingDown) return shuttingDown;
  const a = stack.admin;
  const where =
    a.source === 'env'
      ? 'the password is the one in SWITCHYARD_ADMIN_PASSWORD'
      : `the password is in ${a.file} (mode 0600; not printed)`;
  process.stdout.write(
    [
      '',
      `Switchyard is up: ${stack.url}`,
      `  admin login: ${a.username} — ${where}`,
      `  model: ${stack.offlineModelUrl ? `the offline model at ${stack.offlineModelUrl}` : (stack.modelUrl ?? 'the provider (ANTHROPIC_API_KEY)')}`,
      `  runners: local runner host ${stack.hostUrl} behind the launch broker ${stack.brokerUrl}, logs in ${stack.hostStateDir}/logs`,
      `  state: ${stack.persistTo}`,
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  const died = await Promise.race([stack.unexpectedExit, done]);
  if (typeof died === 'number') return died;
  return shutdown(`${died.name} exited unexpectedly (${died.signal ?? `code ${died.code}`})`, 1);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`npm start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
