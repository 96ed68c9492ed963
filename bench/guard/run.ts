// bench/guard: what claude's guard costs per tool call. The runner answers claude's PreToolUse
// hooks itself, over claude's control protocol (protocol/src/claude/tool-hooks.ts): a decision is
// the codec parsing claude's `hook_callback` line, the rules' lstat/readlink calls on the call's
// paths as the CLI sees them (runner/src/sandbox/cli-view.ts), and the answer line. Timed here
// through the codec as the runner arms it (Sandbox.prepare's check), for a read inside the
// workspace (allowed) and one outside (refused): in the runner's own view (the container, no wall)
// and through /proc/<pid>/root of a real bubblewrap sandbox. Beside them, in the same run, a bare
// `node -e 0` started as a process: the least the command hook claude used to start before each
// call could cost (Node's own start), which is what the runner's answer replaced.
// Run: npm run bench -- guard   (or node bench/guard/run.ts [--runs N])
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterFor, ClaudeCodec, GUARD_CALLBACK_ID } from '@switchyard/protocol';
import { guardArming } from '../../runner/src/cli/cli-process.ts';
import { makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { Sandbox, type SandboxMode } from '../../runner/src/sandbox/sandbox.ts';
import { median } from '../stats.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 20;
/** Decisions per timed sample: one takes microseconds, below the clock's useful resolution. */
const BATCH = 200;

const dir = mkdtempSync(join(tmpdir(), 'sy-bench-guard-'));
const dirs = await makeCliDirs(dir);
writeFileSync(join(dirs.workspace, 'note.txt'), 'a note\n');

/** A codec armed as CliProcess arms it, for a CLI process `pid` under `mode`. */
async function armed(mode: SandboxMode, pid: number): Promise<ClaudeCodec> {
  const spec = adapterFor('claude').spawnSpec({
    executable: { command: '/bin/true' },
    ...dirs,
    modelBaseUrl: 'http://127.0.0.1:9',
    modelApiKey: 'bench',
    guard: 'runner',
  });
  const prepared = await new Sandbox({ mode }).prepare(spec, { backend: 'claude', ...dirs });
  if (prepared.toolHooks === undefined) throw new Error('bench/guard: the spec is not guarded');
  const codec = new ClaudeCodec();
  guardArming(prepared, codec)(pid);
  return codec;
}

const hookLine = (file_path: string) =>
  JSON.stringify({
    type: 'control_request',
    request_id: 'bench',
    request: {
      subtype: 'hook_callback',
      callback_id: GUARD_CALLBACK_ID,
      input: { hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path }, cwd: dirs.workspace },
    },
  });
const calls = {
  'read inside (allowed)': hookLine(join(dirs.workspace, 'note.txt')),
  'read outside (refused)': hookLine('/etc/passwd'),
};

/** µs per decision, parse to answer line; checks the answer is the expected one. */
function decide(codec: ClaudeCodec, line: string, allowed: boolean): number {
  const t0 = performance.now();
  for (let i = 0; i < BATCH; i++) {
    codec.parse(line);
    const [answer] = codec.takeInput();
    if (i === 0 && (answer?.includes('"permissionDecision":"deny"') ?? true) === allowed)
      throw new Error(`bench/guard: unexpected answer ${answer}`);
  }
  return ((performance.now() - t0) * 1000) / BATCH;
}

/** ms from spawn to exit of a bare `node -e 0`. */
function nodeStart(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', () => resolve(performance.now() - t0));
  });
}

// A process in a bubblewrap sandbox laid out as the runner lays one out for a CLI: the view.
const sandboxed = await new Sandbox({ mode: 'bubblewrap', guard: false }).prepare(
  {
    command: '/bin/sh',
    args: ['-c', 'echo ready; exec sleep 600'],
    env: { PATH: '/usr/bin:/bin' },
    cwd: dirs.workspace,
    files: [],
  },
  { backend: 'claude', ...dirs },
);
// Its own process group, killed whole at the end (bubblewrap and what runs inside).
const sleeper = spawn(sandboxed.command, sandboxed.args, {
  cwd: sandboxed.cwd,
  env: sandboxed.env,
  stdio: ['ignore', 'pipe', 'inherit'],
  detached: true,
});
try {
  await new Promise((resolve) => sleeper.stdout.once('data', resolve));
  const views = {
    'the runner’s own view': await armed('none', process.pid),
    'a bubblewrap sandbox’s view': await armed('bubblewrap', sleeper.pid ?? 0),
  };
  const times = new Map<string, number[]>();
  const push = (name: string, v: number) => times.set(name, [...(times.get(name) ?? []), v]);
  for (let i = 0; i <= runs; i++) {
    for (const [view, codec] of Object.entries(views))
      for (const [call, line] of Object.entries(calls)) {
        const us = decide(codec, line, call.includes('allowed'));
        if (i > 0) push(`${call}, ${view}`, us);
      }
    const ms = await nodeStart();
    if (i > 0) push('node -e 0', ms);
  }
  const floor = median(times.get('node -e 0') ?? []);
  console.log(
    `bench/guard — claude's guard per tool call, medians of ${runs} (each of ${BATCH} decisions), interleaved`,
  );
  for (const [name, values] of times) {
    if (name === 'node -e 0') continue;
    const us = median(values);
    console.log(
      `  ${name.padEnd(52)} ${us.toFixed(1)} µs a decision (${((floor * 1000) / us).toFixed(0)}x less than node -e 0)`,
    );
  }
  console.log(`  ${'node -e 0 (a command hook’s floor)'.padEnd(52)} ${floor.toFixed(1)} ms`);
} finally {
  if (sleeper.pid !== undefined) process.kill(-sleeper.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
