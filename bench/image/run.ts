// bench/image: start → CLI ready in the built runner image, as ECS runs it (test/image/image-run.ts:
// the image's root filesystem read-only under bubblewrap, its own PID 1, its volumes, Fargate's
// capabilities, the image's environment), against the bare CLI started in the same root
// filesystem under the same wrapper. The runner is the image's ENTRYPOINT (tini → setpriv →
// `node /app/runner/dist/switchyard-runner.mjs serve`) with its compile cache and container
// sandbox, started as the edge starts a new session's runner (SWITCHYARD_FRESH_SESSION=1), timed
// from the wrapper's spawn until the hub sees status ready with a running CLI. The bare CLI is the
// same CLI with the same spec the runner builds minus the runner (no guard, no credential proxy),
// dropped to the CLI's uid as the runner drops it, timed from the wrapper's spawn until its
// readiness answer. Both pay the wrapper's own start, as a task's container start would be paid by
// both. The image's runner hands pi (a CLI that runs on Node) the compile cache the image was built
// with (SWITCHYARD_CLI_COMPILE_CACHE); pi is also started bare with that cache, which isolates the
// runner's own part of its start, and the bare pi's RSS at its readiness answer is read with and
// without it (what the cache costs in memory). Rounds are interleaved (bare, bare cached, runner,
// per backend); printed are the medians, their ratio and the median of the per-round ratios (each
// runner start against the bare start beside it).
// Needs root (buildah, bubblewrap with the image's capabilities); builds the image if it is not
// built (scripts/image/build.sh, cached).
// Run: node bench/image/run.ts [--runs N] [--backends claude,pi]   (npm run bench -- image)
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { adapterFor, type Backend, BackendSchema } from '@switchyard/protocol';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { CLI_UID, wrapWithUidDrop } from '../../runner/src/sandbox/uid-drop.ts';
import { waitReady } from '../../runner/test/contract/fixture.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';
import { CLI_GID, cliInImage, openImage, type BuiltImage } from '../../test/image/image-run.ts';
import { spawnReady, writeSpecFiles, type PipedCli } from '../cli-ready.ts';
import { descendants, rssKb } from '../procfs.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '7' }, backends: { type: 'string', default: 'claude,pi' } },
});
const runs = Number(values.runs);
const backends = values.backends.split(',').map((b) => BackendSchema.parse(b));
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
if (process.getuid?.() !== 0) throw new Error('bench/image needs root (buildah, bubblewrap with capabilities)');

const MODEL_KEY = 'sk-ant-bench-image-key';

/** Kills a wrapper (its own process group: bubblewrap, its PID 1 and all below) and waits for it. */
async function stop(child: PipedCli | ReturnType<typeof spawn>): Promise<void> {
  const closed = new Promise((r) => child.once('close', r));
  if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGKILL');
  await closed;
}

/** The bare CLI in the image: wrapper spawn → readiness answer. */
async function bareInImage(
  image: BuiltImage,
  backend: Backend,
  model: OfflineModel,
  opts: { compileCache?: boolean } = {},
): Promise<{ ms: number; cliRssKb: number }> {
  const volumes = image.taskVolumes();
  const base = '/tmp/bare';
  const hostPath = (p: string) => join(volumes.hostPath('/tmp'), relative('/tmp', p));
  const spec = adapterFor(backend).spawnSpec({
    executable: cliInImage(backend),
    workspace: `${base}/ws`,
    home: `${base}/home`,
    configDir: `${base}/cli`,
    modelBaseUrl: model.url,
    modelApiKey: MODEL_KEY,
    baseEnv: image.env,
    ...(opts.compileCache === true && { compileCache: image.env.SWITCHYARD_CLI_COMPILE_CACHE }),
  });
  writeSpecFiles(spec, hostPath);
  for (const dir of ['home', 'cli']) mkdirSync(hostPath(`${base}/${dir}`), { recursive: true });
  execFileSync('chown', ['-R', `${CLI_UID}:${CLI_GID}`, hostPath(base)]);
  const dropped = wrapWithUidDrop(spec, { setpriv: '/usr/bin/setpriv', uid: CLI_UID, gid: CLI_GID });
  const { child, ms } = await spawnReady(backend, dropped, (s) =>
    spawn(
      'bwrap',
      image.bwrapArgs(volumes, [s.command, ...s.args], {
        entrypoint: false,
        cwd: s.cwd,
        env: s.env,
      }),
      { env: {}, stdio: ['pipe', 'pipe', 'ignore'], detached: true },
    ),
  );
  // The CLI is the largest of the wrapper's processes (bubblewrap, its PID 1, setpriv exec'd).
  const cliRssKb = Math.max(...descendants(child.pid as number).map(rssKb));
  await stop(child);
  volumes.remove();
  return { ms, cliRssKb };
}

/** The image's runner for a new session: wrapper spawn → the hub sees it ready with its CLI running. */
async function runnerInImage(image: BuiltImage, backend: Backend, model: OfflineModel, hub: TestHub) {
  const volumes = image.taskVolumes();
  const session = await hub.newSession();
  const env = {
    ...session.runnerEnv,
    SWITCHYARD_BACKEND: backend,
    SWITCHYARD_FRESH_SESSION: '1',
    // info: its `cli started` line, whose time says when it spawned its CLI.
    SWITCHYARD_LOG_LEVEL: 'info',
    SWITCHYARD_MODEL_URL: model.url,
    ANTHROPIC_API_KEY: MODEL_KEY,
  };
  const t0 = performance.now();
  const t0Wall = Date.now();
  const child = spawn('bwrap', image.bwrapArgs(volumes, ['serve'], { env }), {
    env: {},
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    await waitReady(session);
  } catch (err) {
    throw new Error(`the image's runner did not get ready: ${String(err)}\n${stderr}`);
  }
  const ms = performance.now() - t0;
  await stop(child);
  volumes.remove();
  const started = stderr
    .split('\n')
    .map((l) => (l.startsWith('{') ? (JSON.parse(l) as { msg?: string; t?: string }) : {}))
    .find((l) => l.msg === 'cli started');
  if (started?.t === undefined) throw new Error(`the image's runner logged no \`cli started\`:\n${stderr}`);
  return { ms, spawnedMs: Date.parse(started.t) - t0Wall };
}

const image = openImage();
const model = await startOfflineModel({ port: 0 });
const hub = await TestHub.start();
/** Node's compile cache only serves a CLI that runs on Node. */
const runsOnNode = (backend: Backend) => backend === 'pi';
const times = new Map(
  backends.map((b) => [
    b,
    {
      bare: [] as number[],
      bareCached: [] as number[],
      runner: [] as number[],
      spawned: [] as number[],
      bareRssKb: [] as number[],
      bareCachedRssKb: [] as number[],
    },
  ]),
);
try {
  // One unmeasured start of each: the first process after the mount reads the image's files cold.
  for (const backend of backends) {
    await bareInImage(image, backend, model);
    if (runsOnNode(backend)) await bareInImage(image, backend, model, { compileCache: true });
    await runnerInImage(image, backend, model, hub);
  }
  for (let i = 0; i < runs; i++) {
    for (const backend of backends) {
      const t = times.get(backend) as NonNullable<ReturnType<typeof times.get>>;
      const bare = await bareInImage(image, backend, model);
      t.bare.push(bare.ms);
      t.bareRssKb.push(bare.cliRssKb);
      if (runsOnNode(backend)) {
        const cached = await bareInImage(image, backend, model, { compileCache: true });
        t.bareCached.push(cached.ms);
        t.bareCachedRssKb.push(cached.cliRssKb);
      }
      const { ms, spawnedMs } = await runnerInImage(image, backend, model, hub);
      t.runner.push(ms);
      t.spawned.push(spawnedMs);
    }
  }
} finally {
  await hub.close();
  await model.close();
  image.close();
}

console.log(`start → CLI ready in the image ${image.image}, ${runs} interleaved rounds, ms (median):`);
for (const [backend, t] of times) {
  const against = (base: number[]) =>
    `${(median(t.runner) / median(base)).toFixed(2)}× (paired ${median(t.runner.map((r, i) => r / (base[i] as number))).toFixed(2)}×)`;
  const mib = (kb: number[]) => `${(median(kb) / 1024).toFixed(1)} MiB`;
  const cached =
    t.bareCached.length > 0
      ? `; bare CLI with the image's compile cache ${median(t.bareCached).toFixed(0)}: ${against(t.bareCached)}` +
        ` (the bare CLI's RSS at its readiness answer ${mib(t.bareRssKb)}, with the cache ${mib(t.bareCachedRssKb)})`
      : '';
  console.log(
    `  ${backend}: runner ${median(t.runner).toFixed(0)}, bare CLI ${median(t.bare).toFixed(0)}: ${against(t.bare)}${cached}; ` +
      `the runner spawned its CLI ${median(t.spawned).toFixed(0)} ms after the wrapper's spawn; ` +
      `runner ${t.runner.map((x) => x.toFixed(0)).join(' ')}; bare ${t.bare.map((x) => x.toFixed(0)).join(' ')}` +
      (t.bareCached.length > 0 ? `; bare cached ${t.bareCached.map((x) => x.toFixed(0)).join(' ')}` : ''),
  );
}
process.exit(0);
