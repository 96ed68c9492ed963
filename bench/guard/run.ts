// bench/guard: what claude's guard hook costs per tool call. claude starts the hook command as a
// new process before every tool call and waits for its answer, so its start-up is latency on
// every call. The command is run as claude runs it (/bin/sh -c, the policy in the environment,
// the hook input on stdin), for a call the guard blocks, with and without the strip-cache preload
// (runner/bin/strip-cache-preload.js), interleaved, and beside a bare `node -e 0` (Node's floor).
// Run: npm run bench -- guard   (or node bench/guard/run.ts [--runs N])
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { claudeHookCommand } from '@switchyard/protocol';
import { policyEnv } from '../../runner/src/sandbox/guard/policy.ts';
import { Sandbox } from '../../runner/src/sandbox/sandbox.ts';
import { median } from '../stats.ts';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 20;
const guard = new Sandbox({ mode: 'none' }).guardOption('claude');
if (guard === undefined) throw new Error('the guard is enabled by default');
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

/** ms from spawn to exit; the hook must block (exit 2). */
function timed(command: string, expectCode: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('/bin/sh', ['-c', command], { env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(input);
    child.on('error', reject);
    child.on('close', (code) =>
      code === expectCode ? resolve(performance.now() - t0) : reject(new Error(`${command}: exit ${code}`)),
    );
  });
}

const commands = {
  'bare node -e 0': { command: `'${process.execPath}' -e 0`, code: 0 },
  'hook, no preload (before)': { command: claudeHookCommand({ ...guard, preload: undefined }), code: 2 },
  'hook, strip-cache preload (now)': { command: claudeHookCommand(guard), code: 2 },
};
const times = new Map<string, number[]>(Object.keys(commands).map((k) => [k, []]));
// The first run of each fills the strip cache, as the image's build does.
for (const { command, code } of Object.values(commands)) await timed(command, code);
for (let i = 0; i < runs; i++)
  for (const [name, { command, code }] of Object.entries(commands)) times.get(name)?.push(await timed(command, code));

console.log(`bench/guard — claude's guard hook per tool call, a blocked call, medians of ${runs}, interleaved`);
const before = median(times.get('hook, no preload (before)') ?? []);
for (const [name, xs] of times)
  console.log(`  ${name.padEnd(34)} ${median(xs).toFixed(1)} ms (${(median(xs) / before).toFixed(2)}x before)`);
