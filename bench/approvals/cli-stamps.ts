// A pass-through in front of the real CLI for bench/approvals (SWITCHYARD_CLI_EXECUTABLE): it
// copies stdin and stdout line by line and appends the wall-clock moment of the lines the bench
// measures to .cli-stamps.jsonl in the CLI's working directory (the session workspace):
// message_in (a user message reached the CLI), delta_out (its first text delta left it),
// ask_out (a can_use_tool request left it), answer_in (the approval answer reached it).
import { spawn } from 'node:child_process';
import { openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) throw new Error('usage: cli-stamps.ts <cli> [args...]');
const stamps = openSync(join(process.cwd(), '.cli-stamps.jsonl'), 'a');
const stamp = (kind: string) =>
  writeSync(stamps, `${JSON.stringify({ kind, t: performance.timeOrigin + performance.now() })}\n`);

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
let deltaSeen = true;

function lines(onLine: (line: string) => void): (chunk: Buffer) => void {
  let buf = '';
  return (chunk) => {
    buf += chunk.toString('utf8');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      onLine(buf.slice(0, i + 1));
      buf = buf.slice(i + 1);
    }
  };
}

process.stdin.on(
  'data',
  lines((line) => {
    if (line.startsWith('{"type":"user"')) {
      stamp('message_in');
      deltaSeen = false;
    } else if (line.includes('"control_response"') && line.includes('"behavior"')) stamp('answer_in');
    child.stdin.write(line);
  }),
);
process.stdin.on('end', () => child.stdin.end());
child.stdout.on(
  'data',
  lines((line) => {
    if (!deltaSeen && line.includes('"text_delta"')) {
      deltaSeen = true;
      stamp('delta_out');
    } else if (line.includes('"can_use_tool"')) stamp('ask_out');
    process.stdout.write(line);
  }),
);
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
