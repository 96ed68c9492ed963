// bench/guard: what claude's guard hook costs per tool call. claude starts the hook command as a
// new process before every tool call and waits for its answer, so its start-up is latency on
// every call. The command is run as claude runs it (/bin/sh -c, the policy in the environment,
// the hook input on stdin), for a call the guard blocks, with and without the strip-cache preload
// (runner/bin/strip-cache-preload.js) and as the one-file build the image's bundle runs
// (runner/scripts/build-bundle.ts), interleaved, and beside a bare `node -e 0` (Node's floor).
// Each also runs inside bubblewrap as the local sandbox lays it out (where claude, and so its hook,
// runs under `npm start`): there bubblewrap's own start is in every figure, so the hook's share is
// its time over `node -e 0` under bubblewrap.
// Run: npm run bench -- guard   (or node bench/guard/run.ts [--runs N])
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claudeHookCommand } from '@switchyard/protocol';
import { policyEnv } from '../../runner/src/sandbox/guard/policy.ts';
import { buildClaudeHook } from '../../runner/scripts/build-bundle.ts';
import { makeCliDirs } from '../../runner/src/cli/spawn.ts';
import { Sandbox } from '../../runner/src/sandbox/sandbox.ts';
import { median } from '../stats.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 20;
/** claude's guard option as the runner gives it, from source or with the one-file hook. */
function claudeGuard(claudeHook?: string) {
  const option = new Sandbox({ mode: 'none', claudeHook }).guardOption('claude');
  if (option === undefined) throw new Error('the guard is enabled by default');
  return option;
}
const guard = claudeGuard();
const input = JSON.stringify({
  hook_event_name: 'PreToolUse',
  tool_name: 'Read',
  tool_input: { file_path: '/proc/self/environ' },
  cwd: tmpdir(),
});
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  ...policyEnv({ v: 1, backend: 'claude', workspace: tmpdir(), tools: ['Read'] }),
};

/** ms from spawn to exit of `command args`; the hook must block (exit 2). */
function timed(command: string, args: string[], expectCode: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(command, args, { env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(input);
    child.on('error', reject);
    child.on('close', (code) =>
      code === expectCode ? resolve(performance.now() - t0) : reject(new Error(`${args.at(-1)}: exit ${code}`)),
    );
  });
}

const dir = mkdtempSync(join(tmpdir(), 'sy-bench-guard-'));
const hookBuild = await buildClaudeHook(join(dir, 'hook', 'claude-hook.cjs'));
const scripts = {
  'bare node -e 0': { script: `'${process.execPath}' -e 0`, code: 0 },
  'hook, no preload (before)': { script: claudeHookCommand({ ...guard, preload: undefined }), code: 2 },
  'hook, strip-cache preload (from source)': { script: claudeHookCommand(guard), code: 2 },
  'hook, one-file build (the image)': {
    script: claudeHookCommand(claudeGuard(hookBuild)),
    code: 2,
  },
};

// The sandbox's bubblewrap command for a shell script: prepared once for the hook (the sandbox
// refuses a spec that does not load the guard), the script swapped in for each row.
const dirs = await makeCliDirs(dir);
const hookScript = scripts['hook, one-file build (the image)'].script;
// The build's directory is bound read-only beside the guard's and the preload's.
const wrapped = await new Sandbox({ mode: 'bubblewrap', claudeHook: hookBuild }).prepare(
  { command: '/bin/sh', args: ['-c', hookScript], env, cwd: dirs.workspace, files: [] },
  { backend: 'claude', ...dirs },
);
const inBwrap = (script: string) => [...wrapped.args.slice(0, -1), script];

const rows = Object.entries(scripts).flatMap(([name, { script, code }]) => [
  { name, command: '/bin/sh', args: ['-c', script], code },
  { name: `${name}, in bubblewrap`, command: wrapped.command, args: inBwrap(script), code },
]);
const times = new Map<string, number[]>(rows.map((r) => [r.name, []]));
// The first run of each fills the strip cache, as the image's build does.
for (const { command, args, code } of rows) await timed(command, args, code);
for (let i = 0; i < runs; i++)
  for (const { name, command, args, code } of rows) times.get(name)?.push(await timed(command, args, code));
rmSync(dir, { recursive: true, force: true });

console.log(`bench/guard — claude's guard hook per tool call, a blocked call, medians of ${runs}, interleaved`);
for (const where of ['', ', in bubblewrap']) {
  const at = (name: string) => median(times.get(`${name}${where}`) ?? []);
  const before = at('hook, no preload (before)');
  const floor = at('bare node -e 0');
  for (const name of Object.keys(scripts))
    console.log(
      `  ${`${name}${where}`.padEnd(58)} ${at(name).toFixed(1)} ms (${(at(name) / before).toFixed(2)}x before; +${(at(name) - floor).toFixed(1)} ms over node -e 0)`,
    );
}
