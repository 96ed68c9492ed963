// bench/runner/tool-call: what the tool-call guard adds to each tool call. claude's guard is the
// runner's answer to its PreToolUse hooks over claude's control protocol
// (protocol/src/claude/tool-hooks.ts); pi's is an extension loaded into pi's own process. Each CLI
// is spawned as the runner spawns it, but by this process (no runner around it, no bubblewrap, no
// model route: the guard alone), with and without its guard, and each turn the offline model has
// it run one tool: a shell command (`true`) or a read of a file in its workspace (claude's hooks
// meet every call but an allowed shell call, toolHooksFor). Timed in this process from the event
// that ends the tool's call (`tool.end`) to the one with its result (`tool.result`): the guard's
// decision, the tool itself and the CLI's own work around them. The CLIs of a backend take their
// turns in rotation, so both see the same load. bench/guard times the decision by itself.
// Run: node bench/runner/tool-call.ts [--turns 11] [--backends claude,pi]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { adapterFor, BackendSchema, type AgentEvent, type Backend } from '@switchyard/protocol';
import { locateCli, type CliProcess } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { scripted } from '../../runner/test/contract/fixture.ts';
import { cliSpawnSpec, makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { startReady } from '../../runner/src/cli/start-ready.ts';
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

/**
 * One CLI spawned as the runner spawns it (cliSpawnSpec, CliProcess), its events stamped as they
 * are parsed from its stdout.
 */
class Cli {
  private waiters: Array<{ pred: (e: AgentEvent) => boolean; resolve: (at: number) => void }> = [];
  private proc: CliProcess | undefined;
  /** A file in the CLI's workspace, for the read. */
  private note = '';

  private onEvent(event: AgentEvent): void {
    const at = performance.now();
    const met = this.waiters.filter((w) => w.pred(event));
    this.waiters = this.waiters.filter((w) => !met.includes(w));
    for (const w of met) w.resolve(at);
  }

  static async start(backend: Backend, model: OfflineModel, dir: string, guard: boolean): Promise<Cli> {
    const sandbox = new Sandbox({ mode: 'none', guard });
    const dirs = await makeCliDirs(dir);
    const spec = await cliSpawnSpec({
      backend,
      executable: locateCli(backend),
      dirs,
      model: { baseUrl: model.url, apiKey: 'bench' },
      walls: { guard: (b) => sandbox.guardOption(b), prepare: (sp, paths) => sandbox.prepare(sp, paths) },
      modelName: undefined,
      retry: undefined,
      compileCache: undefined,
      baseEnv: process.env,
    });
    const cli = new Cli();
    cli.note = join(dirs.workspace, 'note.txt');
    writeFileSync(cli.note, 'a note\n');
    const started = await startReady(
      backend,
      spec,
      adapterFor(backend).createCodec(),
      { onEvent: (event) => cli.onEvent(event) },
      60_000,
    );
    if (!started.ok) throw new Error(`tool-call bench: ${started.problem}`);
    cli.proc = started.proc;
    return cli;
  }

  /** `p`, or an error naming the CLI's exit if it exits first: a CLI that dies stops the bench. */
  private unlessExited<T>(p: Promise<T>): Promise<T> {
    const exited = this.proc?.exited.then((exit): never => {
      throw new Error(`tool-call bench: the CLI exited (${exit.code ?? exit.signal}): ${exit.stderrHead.trim()}`);
    });
    return exited === undefined ? p : Promise.race([p, exited]);
  }

  private next(pred: (e: AgentEvent) => boolean): Promise<number> {
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }

  /** One turn that runs the tool once: ms from the call's end to its result. */
  async toolTurn(turn: number, tool: Tool): Promise<number> {
    const end = this.next((e) => e.type === 'tool.end');
    const result = this.next((e) => {
      if (e.type !== 'tool.result') return false;
      // A refused or failed call would time the refusal, not the tool.
      if (e.isError) throw new Error(`tool-call bench: turn ${turn}: the tool failed: ${e.output}`);
      return true;
    });
    const done = this.next((e) => e.type === 'turn.done');
    const script = tool === 'shell' ? { tool, command: 'true' } : { tool, path: this.note };
    this.proc?.sendUserMessage({ text: scripted(`turn ${turn}`, script) });
    const [endAt, resultAt] = await this.unlessExited(Promise.all([end, result]));
    await this.unlessExited(done);
    return resultAt - endAt;
  }

  async stop(): Promise<void> {
    this.proc?.closeInput();
    await this.proc?.exited;
  }
}

type Tool = 'shell' | 'read';

const model = await startOfflineModel();
const scratch = mkdtempSync(join(tmpdir(), 'sy-bench-tool-'));
try {
  console.log(`bench/runner/tool-call: medians of ${turns} turns, ms from a tool call's end to its result`);
  console.log('backend  tool   without the guard  with it');
  for (const parsed of backends) {
    if (!parsed.success) continue;
    const backend = parsed.data;
    const variants = [false, true];
    const dir = join(scratch, backend);
    const clis: Cli[] = [];
    const tools: Tool[] = ['shell', 'read'];
    const times = tools.map(() => variants.map((): number[] => []));
    try {
      for (const [i, guard] of variants.entries()) clis.push(await Cli.start(backend, model, join(dir, `${i}`), guard));
      // Turn 0 is each CLI's first (its code loaded on first use); left out.
      for (let turn = 0; turn <= turns; turn++)
        for (const [t, tool] of tools.entries())
          for (const [i, cli] of clis.entries()) {
            const ms = await cli.toolTurn(turn, tool);
            if (turn > 0) times[t]?.[i]?.push(ms);
          }
    } finally {
      for (const cli of clis) await cli.stop();
    }
    for (const [t, tool] of tools.entries()) {
      const [w = Number.NaN, g = Number.NaN] = (times[t] ?? []).map(median);
      const cell = `${g.toFixed(1)} (${g >= w ? '+' : ''}${(g - w).toFixed(1)} ms, ${(g / w).toFixed(2)}x)`;
      console.log(`${backend.padEnd(7)}  ${tool.padEnd(5)}  ${w.toFixed(1).padStart(17)}  ${cell}`);
    }
  }
} finally {
  await model.close();
  rmSync(scratch, { recursive: true, force: true });
}
