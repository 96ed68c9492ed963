// bench/runner (6): a streamed answer through the model route. The same client (stream-client.cjs),
// a Node process, makes `calls` streaming Messages calls one after another on one keep-alive
// connection and times each call's first text delta, in-process: inside bubblewrap through the
// route (socat in the sandbox's network namespace, the credential proxy's unix socket, the proxy)
// and on the host straight to the model. Three clients: Node's http module and fetch (undici), and
// Node's http module opening a new connection for each call, as both CLIs did for a call after a
// pause while the proxy closed their idle connection after Node's 5 s (through the route: a new
// socat child and a new connection to the proxy each). The first call of each is left out (a fresh
// connection: no delayed ACKs yet).
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SpawnSpec } from '@switchyard/protocol';
import { makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { MODEL_URL } from '../../runner/src/sandbox/bwrap.ts';
import { startModelRoute } from '../../runner/src/sandbox/model-proxy.ts';
import { Sandbox } from '../../runner/src/sandbox/sandbox.ts';
import { median } from '../stats.ts';
import { OFFLINE_MODEL_BIN, spawnUrlProcess } from '../url-process.ts';

const CLIENTS = ['http', 'fetch', 'http-new'] as const;
type Client = (typeof CLIENTS)[number];
const STREAM_CLIENT = resolve(import.meta.dirname, 'stream-client.cjs');
const PROMPT = `#offline ${JSON.stringify({ text: 'a b c d e f g h', chunks: 8, delayMs: 5 })}`;

function firstDeltas(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    // Not spawnSync: the credential proxy answering the client runs on this process's event loop.
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the stream client exited ${code}`));
      resolve((JSON.parse(out) as Array<number | null>).slice(1).map((ms) => ms ?? NaN));
    });
  });
}

export interface RouteStream {
  /** Median first delta (ms) per client: through the route in the sandbox, and on the host straight to the model. */
  route: Record<Client, number>;
  direct: Record<Client, number>;
}

export async function routeStream(calls: number): Promise<RouteStream> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-bench-route-stream-'));
  const dirs = await makeCliDirs(dir);
  // Inside the sandbox only the workspace and the installs are there to run.
  const client = join(dirs.workspace, 'stream-client.cjs');
  copyFileSync(STREAM_CLIENT, client);
  // The model in a process of its own, as a provider is: in this process its writes and the
  // credential proxy's reads would share one event loop, and the route would not see the answer's
  // pieces as a provider sends them (with the model in-process no stall showed; out of it, ~40 ms).
  const model = await spawnUrlProcess([OFFLINE_MODEL_BIN, '--port', '0']);
  const route = await startModelRoute('bubblewrap', model.url, undefined);
  const sandbox = new Sandbox({ mode: 'bubblewrap', guard: false });
  try {
    const none = { http: NaN, fetch: NaN, 'http-new': NaN };
    const out: RouteStream = { route: { ...none }, direct: { ...none } };
    for (const kind of CLIENTS) {
      const args = (base: string, key: string) => [client, base, key, kind, String(calls), PROMPT];
      const spec: SpawnSpec = {
        command: process.execPath,
        args: args(MODEL_URL, route.apiKey),
        env: { PATH: '/usr/bin:/bin' },
        cwd: dirs.workspace,
        files: [],
      };
      const w = await sandbox.prepare(spec, { backend: 'pi', ...dirs, modelSocket: route.socketPath });
      out.route[kind] = median(await firstDeltas(w.command, w.args, w.env, w.cwd));
      const direct = args(model.url, 'offline');
      out.direct[kind] = median(await firstDeltas(process.execPath, direct, { PATH: '/usr/bin:/bin' }, dirs.workspace));
    }
    return out;
  } finally {
    await route.close();
    model.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
