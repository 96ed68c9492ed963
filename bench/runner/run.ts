// bench/runner: what the runner costs on top of the bare CLI, measured side by side in one run.
//   (1) start → CLI ready: `switchyard-runner serve` process start until the hub sees
//       status ready/running, vs the bare CLI's spawn until its own readiness answer
//       (pi: get_state response; claude: initialize control_response).
//   (2) user message → first text.delta: hub sends user_message until the hub holds the
//       first text.delta, vs writing the prompt to the bare CLI until its first delta line.
//   (3) the runner process's RSS (the CLI is a separate process, so it is excluded).
// The runner is measured twice: with SWITCHYARD_SANDBOX=none (the runner's own cost) and with
// the default sandbox (guard self-test, bubblewrap, model proxy), so each cost shows separately.
// Same offline model, same spawn spec. Run: node bench/runner/run.ts [--runs N]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { adapterFor, type Backend, type SpawnSpec } from '@switchyard/protocol';
import { locateCli, readinessFor } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { serveRunner, stopRunner, waitReady } from '../../runner/test/contract/fixture.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const now = () => performance.now();

/** Resolves when `pred(line)` holds for a stdout line of `child`. */
function lineWhere(child: ReturnType<typeof spawn>, pred: (line: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      if (lines.some(pred)) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
  });
}

function bareSpec(backend: Backend, model: OfflineModel, dir: string): SpawnSpec {
  return adapterFor(backend).spawnSpec({
    executable: locateCli(backend),
    workspace: join(dir, 'ws'),
    home: join(dir, 'home'),
    configDir: join(dir, 'cli'),
    modelBaseUrl: model.url,
    modelApiKey: 'bench',
    baseEnv: process.env,
  });
}

const isDelta = (line: string) => line.includes('"text_delta"');

async function bare(
  backend: Backend,
  model: OfflineModel,
): Promise<{ readyMs: number[]; firstDeltaMs: number[]; cliRssKb: number }> {
  const readyMs: number[] = [];
  const firstDeltaMs: number[] = [];
  let cliRssKb = 0;
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'sy-bench-'));
    const spec = bareSpec(backend, model, dir);
    mkdirSync(spec.cwd, { recursive: true });
    for (const f of spec.files) {
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(f.path, f.content);
    }
    const codec = adapterFor(backend).createCodec();
    const readiness = readinessFor(backend);
    const t0 = now();
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'ignore'] });
    const ready = lineWhere(
      child,
      (l) => readiness.isReady(l, undefined) || (backend === 'pi' && l.includes('"command":"get_state"')),
    );
    for (const line of [...codec.initLines(), ...readiness.lines]) child.stdin.write(line);
    await ready;
    readyMs.push(now() - t0);
    const delta = lineWhere(child, isDelta);
    const t1 = now();
    child.stdin.write(codec.encodeUserMessage({ text: `bench ${i}` }));
    await delta;
    firstDeltaMs.push(now() - t1);
    cliRssKb = rssKb(child.pid ?? 0);
    child.stdin.end();
    await new Promise((r) => child.on('close', r));
    rmSync(dir, { recursive: true, force: true });
  }
  return { readyMs, firstDeltaMs, cliRssKb };
}

async function viaRunner(
  backend: Backend,
  model: OfflineModel,
  hub: TestHub,
  env: Record<string, string>,
): Promise<{ readyMs: number[]; firstDeltaMs: number[]; runnerRssKb: number }> {
  const readyMs: number[] = [];
  const firstDeltaMs: number[] = [];
  let runnerRssKb = 0;
  for (let i = 0; i < runs; i++) {
    const session = await hub.newSession();
    const t0 = now();
    const served = serveRunner(session, backend, model.url, { SWITCHYARD_LOG_LEVEL: 'warn', ...env });
    await waitReady(session);
    readyMs.push(now() - t0);
    // Several turns on one runner: the first is the cold one, like the bare CLI's.
    const t1 = now();
    const { messageId } = await session.sendMessage(`bench ${i}`);
    await session.waitFor(
      () => session.events().some((e) => e.messageId === messageId && e.event.type === 'text.delta'),
      'first delta',
    );
    firstDeltaMs.push(now() - t1);
    await session.waitFor(
      () => session.events().some((e) => e.messageId === messageId && e.event.type === 'turn.done'),
      'turn.done',
    );
    runnerRssKb = Math.max(runnerRssKb, rssKb(served.runner.pid));
    await stopRunner(served.runner);
  }
  return { readyMs, firstDeltaMs, runnerRssKb };
}

function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const model = await startOfflineModel();
const hub = await TestHub.start();
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
console.log(`bench/runner — medians of ${runs} runs each, offline model on loopback, one run side by side`);
console.log(
  'runner(none): SWITCHYARD_SANDBOX=none, the runner alone; runner(default): with the sandbox (guard self-test, bubblewrap, model proxy)\n',
);
for (const backend of ['pi', 'claude'] as const) {
  const b = await bare(backend, model);
  const plain = await viaRunner(backend, model, hub, { SWITCHYARD_SANDBOX: 'none' });
  const full = await viaRunner(backend, model, hub, {});
  const bareReady = median(b.readyMs);
  const bareDelta = median(b.firstDeltaMs);
  console.log(`${backend}`);
  console.log(
    `  (1) start → CLI ready       bare ${fmt(bareReady)} | runner(none) ${fmt(median(plain.readyMs))} ${ratio(median(plain.readyMs), bareReady)} | runner(default) ${fmt(median(full.readyMs))} ${ratio(median(full.readyMs), bareReady)}`,
  );
  console.log(
    `  (2) message → first delta   bare ${fmt(bareDelta)} | runner(none) ${fmt(median(plain.firstDeltaMs))} ${ratio(median(plain.firstDeltaMs), bareDelta)} | runner(default) ${fmt(median(full.firstDeltaMs))} ${ratio(median(full.firstDeltaMs), bareDelta)}`,
  );
  console.log(
    `  (3) runner RSS, CLI excluded: none ${(plain.runnerRssKb / 1024).toFixed(1)} MiB, default ${(full.runnerRssKb / 1024).toFixed(1)} MiB (the CLI itself ${(b.cliRssKb / 1024).toFixed(1)} MiB; ratio ${ratio(full.runnerRssKb, b.cliRssKb)})`,
  );
}
await hub.close();
await model.close();
