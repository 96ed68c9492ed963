// Re-measures every speed goal in one sitting (README "Speed" → "Goals, measured in one sitting"):
// the benches behind the goals, one after another with the sitting's arguments, so their ratios
// come from the same machine state. Each bench's output goes to the terminal and to
// <out>/<name>.log, headed by its start time and the load average; nothing else should run
// meanwhile (a CI run beside it moves every figure).
// Run: node bench/goals.ts [--only runner,pool,…] [--out DIR]   (all: about 50 minutes)
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');

const SITTING: Array<{ name: string; args: string[] }> = [
  { name: 'runner', args: ['bench/runner/run.ts', '--runs', '7'] },
  // Start → ready again in the built image as ECS runs it (needs root: buildah, bubblewrap).
  { name: 'image', args: ['bench/image/run.ts', '--runs', '9'] },
  { name: 'route', args: ['bench/runner/run.ts', '--route'] },
  { name: 'pool', args: ['bench/pool/run.ts', '--backends', 'claude,pi', '--runs', '5', '--provision-delay', '10s'] },
  // The pool's first message again with each runner claimed 2 s after it turned idle, as most
  // claims in production come (a runner waits in the pool for a session); the run above claims at
  // once, as a burst of new sessions would. The goal is read both ways.
  {
    name: 'pool-waited',
    args: [
      'bench/pool/run.ts',
      '--backends',
      'claude,pi',
      '--runs',
      '5',
      '--provision-delay',
      '2s',
      '--claim-after',
      '2s',
    ],
  },
  { name: 'fanout', args: ['bench/fanout/run.ts'] },
  { name: 'e2e', args: ['bench/e2e/run.ts', '--runs', '7', '--viewers', '1,50,500', '--sessions', '3'] },
  { name: 'transport', args: ['bench/fanout/transport.ts', '--rounds', '5'] },
  { name: 'memory', args: ['bench/fanout/memory.ts', '--viewers', '500', '--rounds', '3', '--allocator'] },
];

function options() {
  try {
    return parseArgs({ options: { only: { type: 'string' }, out: { type: 'string' } } }).values;
  } catch (err) {
    // An unknown option or a missing value, named in parseArgs' own message.
    console.error(
      `${err instanceof Error ? err.message : String(err)}; usage: node bench/goals.ts [--only NAMES] [--out DIR]`,
    );
    process.exit(2);
  }
}
const values = options();
const only = values.only?.split(',');
const unknown = only?.filter((name) => !SITTING.some((s) => s.name === name)) ?? [];
if (unknown.length > 0) {
  console.error(`--only: no bench named ${unknown.join(', ')} (one of ${SITTING.map((s) => s.name).join(', ')})`);
  process.exit(2);
}
const out = resolve(values.out ?? join(ROOT, 'tmp', `goals-${new Date().toISOString().replace(/[:.]/g, '-')}`));
mkdirSync(out, { recursive: true });

function run(step: (typeof SITTING)[number]): Promise<number> {
  const head = `${new Date().toISOString()} node ${step.args.join(' ')} (load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')})\n`;
  const log = createWriteStream(join(out, `${step.name}.log`));
  log.write(head);
  process.stdout.write(`\n### ${step.name}: ${head}`);
  const child = spawn(process.execPath, step.args, {
    cwd: ROOT,
    // The tools the benches start (wrangler, the CLIs' `env node`) run on this Node too: started
    // with another `node` first on PATH, wrangler refused it and the stack's benches stopped.
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (d: Buffer) => {
      process.stdout.write(d);
      log.write(d);
    });
  }
  return new Promise((done) => {
    child.on('close', (code) => {
      log.end(`${new Date().toISOString()} exit ${code}\n`);
      done(code ?? 1);
    });
  });
}

// The stack the pool, e2e and memory benches start serves the web app, as `npm run bench` builds it
// first: without it they would fail minutes into the sitting.
if (spawnSync('npm', ['run', '--silent', 'build:web'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) process.exit(1);

let failed = 0;
for (const step of SITTING) {
  if (only !== undefined && !only.includes(step.name)) continue;
  if ((await run(step)) !== 0) failed++;
}
console.log(`\noutputs in ${out}`);
process.exit(failed > 0 ? 1 : 0);
