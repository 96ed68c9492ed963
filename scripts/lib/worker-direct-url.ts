// Where Miniflare serves a Worker started with wrangler's `unstable_startWorker` itself, without
// wrangler dev's proxy (a second workerd) in front: for benches to tell the dev proxy's share of
// a request from the Worker's own.
import type { unstable_startWorker } from 'wrangler';

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;

/**
 * Resolves with the Worker's own URL once wrangler has loaded it. Register it as soon as the
 * Worker object exists: wrangler builds and loads the Worker after that.
 */
export function workerDirectUrl(worker: Worker): Promise<string> {
  return new Promise<string>((resolve) =>
    worker.raw.once(
      'reloadComplete',
      (event: { proxyData: { userWorkerUrl: { protocol: string; hostname: string; port: string } } }) => {
        const u = event.proxyData.userWorkerUrl;
        resolve(`${u.protocol}//${u.hostname}:${u.port}`);
      },
    ),
  );
}
