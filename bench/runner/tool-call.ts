// bench/runner/tool-call: what the tool-call guard adds to each tool call. claude's guard is a
// PreToolUse command hook, a new node process per call (protocol/src/claude/spawn.ts); pi's is an
// extension loaded into pi's own process. Each CLI is spawned directly (no runner, no bubblewrap,
// no model route: the guard alone), with and without its guard, and each turn the offline model
// has it run one shell tool (`true`). Timed in this process from the line that ends the tool's
// call (`tool.end`) to the line with its result (`tool.result`): the guard's decision, the tool
// itself and the CLI's own work around them. The two CLIs of a backend take their turns
// alternately, so both see the same load. bench/guard times claude's hook process by itself.
// Run: node bench/runner/tool-call.ts [--turns 11] [--backends claude,pi]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { adapterFor, BackendSchema, type AgentCodec, type AgentEvent, type Backend } from '@switchyard/protocol';
import { locateCli, readinessFor, type Readiness } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { scripted } from '../../runner/test/contract/fixture.ts';
import { makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { Sandbox } from '../../runner/src/sandbox/sandbox.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '11' }, backends: { type: 'string', default: 'claude,pi' } },
});
const turns = Number(values.turns);
const backends = (values.backends ?? '').split(',').map((b) => BackendSchema.safeParse(b));
if (!Number.isInteger(turns) || turns < 1 || backends.some((b) => !b.success)) {
  console.error('usage: node bench/runner/tool-call.ts [--turns N] [--backends claude,pi]');
  process.exit(2);
}

/** One CLI on stdio, its stdout decoded into events as lines arrive, each stamped on arrival. */
class Cli {
  private waiters: Array<{ pred: (e: AgentEvent) => boolean; resolve: (at: number) => void }> = [];
  private readonly ready: Promise<void>;
  readonly child: ChildProcess;
  private readonly codec: AgentCodec;
  private constructor(child: ChildProcess, codec: AgentCodec, readiness: Readiness) {
    this.child = child;
    this.codec = codec;
    let onReady: () => void = () => undefined;
    this.ready = new Promise((resolve) => {
      onReady = resolve;
    });
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      const at = performance.now();
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        if (readiness.isReady(line, undefined)) onReady();
        for (const event of codec.parse(line)) {
          if (readiness.isReady(undefined, event)) onReady();
          const met = this.waiters.filter((w) => w.pred(event));
          this.waiters = this.waiters.filter((w) => !met.includes(w));
          for (const w of met) w.resolve(at);
        }
        for (const input of codec.takeInput()) child.stdin?.write(input);
      }
    });
    for (const line of [...codec.initLines(), ...readiness.lines]) child.stdin?.write(line);
  }

  static async start(backend: Backend, model: OfflineModel, dir: string, guard: boolean): Promise<Cli> {
    const dirs = await makeCliDirs(dir);
    const sandbox = new Sandbox({ mode: 'none', guard });
    let spec = adapterFor(backend).spawnSpec({
      executable: locateCli(backend),
      ...dirs,
      modelBaseUrl: model.url,
      modelApiKey: 'bench',
      baseEnv: process.env,
      guard: sandbox.guardOption(backend),
    });
    spec = await sandbox.prepare(spec, { backend, ...dirs, modelSocket: undefined });
    mkdirSync(spec.cwd, { recursive: true });
    for (const f of spec.files) {
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(f.path, f.content);
    }
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'ignore'] });
    const cli = new Cli(child, adapterFor(backend).createCodec(), readinessFor(backend));
    await cli.ready;
    return cli;
  }

  private next(pred: (e: AgentEvent) => boolean): Promise<number> {
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }

  /** One turn that runs the shell tool once: ms from the call's end to its result. */
  async toolTurn(turn: number): Promise<number> {
    const end = this.next((e) => e.type === 'tool.end');
    const result = this.next((e) => {
      if (e.type !== 'tool.result') return false;
      // A refused or failed call would time the refusal, not the tool.
      if (e.isError) throw new Error(`tool-call bench: turn ${turn}: the tool failed: ${e.output}`);
      return true;
    });
    const done = this.next((e) => e.type === 'turn.done');
    this.child.stdin?.write(
      this.codec.encodeUserMessage({ text: scripted(`turn ${turn}`, { tool: 'shell', command: 'true' }) }),
    );
    const [endAt, resultAt] = await Promise.all([end, result]);
    await done;
    return resultAt - endAt;
  }

  async stop(): Promise<void> {
    this.child.stdin?.end();
    if (this.child.exitCode === null) await new Promise((r) => this.child.on('close', r));
  }
}

const model = await startOfflineModel();
try {
  console.log(`bench/runner/tool-call: medians of ${turns} turns, ms from a tool call's end to its result`);
  console.log('backend  without the guard  with it  (the guard adds)');
  for (const parsed of backends) {
    if (!parsed.success) continue;
    const backend = parsed.data;
    const dir = mkdtempSync(join(tmpdir(), 'sy-bench-tool-'));
    const bare = await Cli.start(backend, model, join(dir, 'bare'), false);
    const guarded = await Cli.start(backend, model, join(dir, 'guarded'), true);
    const without: number[] = [];
    const withGuard: number[] = [];
    try {
      // Turn 0 is each CLI's first (its code loaded on first use); left out.
      for (let turn = 0; turn <= turns; turn++) {
        const a = await bare.toolTurn(turn);
        const b = await guarded.toolTurn(turn);
        if (turn === 0) continue;
        without.push(a);
        withGuard.push(b);
      }
    } finally {
      await bare.stop();
      await guarded.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    const w = median(without);
    const g = median(withGuard);
    console.log(
      `${backend.padEnd(7)}  ${w.toFixed(1).padStart(17)}  ${g.toFixed(1).padStart(7)}  (${g >= w ? '+' : ''}${(g - w).toFixed(1)} ms, ${(g / w).toFixed(2)}x)`,
    );
  }
} finally {
  await model.close();
}
