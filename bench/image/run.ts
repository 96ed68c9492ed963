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
// both. Rounds are interleaved (bare, runner, per backend); printed are the medians, their ratio
// and the median of the per-round ratios (each runner start against the bare start beside it).
// Needs root (buildah, bubblewrap with the image's capabilities); builds the image if it is not
// built (scripts/image/build.sh, cached).
// Run: node bench/image/run.ts [--runs N] [--backends claude,pi]   (npm run bench -- image)
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { adapterFor, type Backend, BackendSchema } from '@switchyard/protocol';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { locateCli } from '@switchyard/runner/cli';
import { CLI_UID, wrapWithUidDrop } from '../../runner/src/sandbox/uid-drop.ts';
import { waitReady } from '../../runner/test/contract/fixture.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';
import { openImage, REPO, type BuiltImage } from '../../test/image/image-run.ts';
import { spawnReady, writeSpecFiles, type PipedCli } from '../cli-ready.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '7' }, backends: { type: 'string', default: 'claude,pi' } },
});
const runs = Number(values.runs);
const backends = values.backends.split(',').map((b) => BackendSchema.parse(b));
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
if (process.getuid?.() !== 0) throw new Error('bench/image needs root (buildah, bubblewrap with capabilities)');

/** The image's /app is this checkout's tree: the CLIs are where locateCli finds them here. */
const inImage = (hostPath: string) => join('/app', relative(REPO, hostPath));
/** The group the CLI's uid shares with the runner's in the image (runner/Dockerfile). */
const CLI_GID = 10001;
const MODEL_KEY = 'sk-ant-bench-image-key';

function cliInImage(backend: Backend) {
  const host = locateCli(backend);
  // pi is a Node script run by the runner's own Node: the image's.
  return backend === 'pi'
    ? { ...host, command: '/usr/local/bin/node', prefixArgs: host.prefixArgs.map(inImage) }
    : { ...host, command: inImage(host.command) };
}

/** Kills a wrapper (its own process group: bubblewrap, its PID 1 and all below) and waits for it. */
async function stop(child: PipedCli | ReturnType<typeof spawn>): Promise<void> {
  const closed = new Promise((r) => child.once('close', r));
  if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGKILL');
  await closed;
}

/** The bare CLI in the image: wrapper spawn → readiness answer. */
async function bareInImage(image: BuiltImage, backend: Backend, model: OfflineModel): Promise<number> {
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
  await stop(child);
  volumes.remove();
  return ms;
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
const times = new Map(
  backends.map((b) => [b, { bare: [] as number[], runner: [] as number[], spawned: [] as number[] }]),
);
try {
  // One unmeasured start of each: the first process after the mount reads the image's files cold.
  for (const backend of backends) {
    await bareInImage(image, backend, model);
    await runnerInImage(image, backend, model, hub);
  }
  for (let i = 0; i < runs; i++) {
    for (const backend of backends) {
      const t = times.get(backend) as { bare: number[]; runner: number[]; spawned: number[] };
      t.bare.push(await bareInImage(image, backend, model));
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
  const paired = median(t.runner.map((r, i) => r / (t.bare[i] as number)));
  console.log(
    `  ${backend}: runner ${median(t.runner).toFixed(0)}, bare CLI ${median(t.bare).toFixed(0)}: ` +
      `${(median(t.runner) / median(t.bare)).toFixed(2)}× (paired ${paired.toFixed(2)}×); ` +
      `the runner spawned its CLI ${median(t.spawned).toFixed(0)} ms after the wrapper's spawn; ` +
      `runner ${t.runner.map((x) => x.toFixed(0)).join(' ')}; bare ${t.bare.map((x) => x.toFixed(0)).join(' ')}`,
  );
}
process.exit(0);
