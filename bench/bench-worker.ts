// A bench's own Worker (an `edge/bench/*.toml`) under wrangler dev on loopback, with its state on a
// throwaway directory: where wrangler dev's proxy serves it and where Miniflare serves it itself.
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { unstable_startWorker } from 'wrangler';
import { workerDirectUrl } from '../scripts/lib/worker-direct-url.ts';
import { throwawayEdgeState } from './edge-state.ts';

export interface BenchWorker {
  /** Through wrangler dev's proxy. */
  proxyUrl: string;
  /** Miniflare's own socket, no proxy in front. */
  directUrl: string;
  stop(): Promise<void>;
}

/** `toml`: a file name under edge/bench. */
export async function startBenchWorker(toml: string): Promise<BenchWorker> {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
  process.env.WRANGLER_SEND_METRICS = 'false';
  const state = throwawayEdgeState(toml.replace(/\.toml$/, ''));
  const worker = await unstable_startWorker({
    config: resolve(import.meta.dirname, '..', 'edge', 'bench', toml),
    dev: {
      server: { hostname: '127.0.0.1', port: 0 },
      inspector: false,
      persist: state.dir,
      watch: false,
      logLevel: 'warn',
    },
  });
  const direct = workerDirectUrl(worker);
  await worker.ready;
  // The proxy holds requests until the Worker's first load, after which its own URL is known.
  await (await worker.fetch('http://localhost/')).arrayBuffer();
  return {
    proxyUrl: (await worker.url).origin,
    directUrl: await direct,
    async stop() {
      await worker.dispose();
      await rm(state.dir, { recursive: true, force: true });
    },
  };
}
