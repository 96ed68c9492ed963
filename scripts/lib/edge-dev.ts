// The edge service of the local stack: `wrangler dev` through wrangler's programmatic API
// (unstable_startWorker, the API `wrangler dev` itself runs on). The command line always opens
// a DevTools inspector (wrangler's inspector proxy, and workerd's own behind it), which anything
// on this machine's loopback could attach to and run code in the Worker holding the edge's
// secrets; the API can leave it off. An inspector is opened only when asked for (--inspector-port).
//
//   node edge-dev.ts '<json EdgeDevOptions>'
//
// Prints one JSON line `{"url", "direct"?}` once serving; SIGINT/SIGTERM dispose of the Worker and exit.
// `direct` is where Miniflare serves the Worker itself, without wrangler dev's proxy (a second
// workerd) in front: for benches to tell the dev proxy's share of a request from the edge's own.
import { unstable_startWorker } from 'wrangler';
import { workerDirectUrl } from './worker-direct-url.ts';

export interface EdgeDevOptions {
  config: string;
  ip: string;
  port: number;
  persistTo: string;
  /** Secrets (0600 file), never on the command line. */
  envFile: string;
  /** Plain-text vars (what `--var NAME:VALUE` gives). */
  vars: Record<string, string>;
  /** A prebuilt bundle served as is (`--no-bundle`); absent: build edge/src and reload on edits. */
  bundle?: string;
  /** Open a DevTools inspector on this port (0: a free one). Absent: none. */
  inspectorPort?: number;
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? '') as EdgeDevOptions;
  const worker = await unstable_startWorker({
    config: o.config,
    envFiles: [o.envFile],
    ...(o.bundle !== undefined && { entrypoint: o.bundle, build: { bundle: false } }),
    bindings: Object.fromEntries(
      Object.entries(o.vars).map(([name, value]) => [name, { type: 'plain_text' as const, value }]),
    ),
    dev: {
      server: { hostname: o.ip, port: o.port },
      inspector: o.inspectorPort === undefined ? false : { hostname: '127.0.0.1', port: o.inspectorPort },
      persist: o.persistTo,
      watch: o.bundle === undefined,
      logLevel: 'info',
    },
  });
  // Should the reload event ever come before this, the line below simply says nothing of `direct`.
  const direct = workerDirectUrl(worker);
  await worker.ready;
  // wrangler's proxy is ready before the Worker behind it; it holds requests until the Worker's
  // first reload is complete, so once one came back the reload event has been emitted.
  await (await worker.fetch('http://localhost/healthz')).arrayBuffer();
  const directUrl = await Promise.race([direct, Promise.resolve(undefined)]);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    worker.dispose().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const inspector = await worker.inspectorUrl;
  process.stdout.write(
    `${JSON.stringify({ url: String(await worker.url), ...(directUrl !== undefined && { direct: directUrl }), ...(inspector !== undefined && { inspector: String(inspector) }) })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`edge: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
