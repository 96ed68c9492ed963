// `switchyard-offline-model --port N`: runs the offline model until signalled.
// Prints exactly one JSON line on stdout once listening, so a parent can wait for it.
// The `/_offline/*` control routes take `Authorization: Bearer $SWITCHYARD_OFFLINE_CONTROL_TOKEN`;
// without that variable they take a random token nobody knows, i.e. they are closed.
import { parseArgs } from 'node:util';
import { startOfflineModel } from './server.ts';

const USAGE = 'usage: switchyard-offline-model [--port N]   (listens on 127.0.0.1; port 0 or none = any free port)';

async function main(): Promise<void> {
  let port: number;
  try {
    const { values } = parseArgs({ options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    port = Number(values.port ?? '0');
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${values.port}`);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const controlToken = process.env.SWITCHYARD_OFFLINE_CONTROL_TOKEN || undefined;
  delete process.env.SWITCHYARD_OFFLINE_CONTROL_TOKEN;
  const model = await startOfflineModel({ port, ...(controlToken !== undefined && { controlToken }) });
  const stop = (): void => {
    model.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  // Handlers first: a parent may signal the moment it reads the line.
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.write(`${JSON.stringify({ url: model.url, port: model.port })}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`switchyard-offline-model: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
