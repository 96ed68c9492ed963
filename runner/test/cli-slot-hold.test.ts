import { execPath } from 'node:process';
import { ClaudeCodec, type CliExit } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import type { PreparedSpawn } from '../src/cli/spawn.ts';
import { CliSlot } from '../src/serve/cli-slot.ts';

// claude's guard hooks are registered by its readiness handshake (runner/src/cli/readiness.ts), so a
// message must not reach it before it answered: a stand-in CLI that answers its `initialize` late
// and exits 0 only if a message came after its answer, 3 if one came before.
const LATE_ANSWER = `
const rl = require('node:readline').createInterface({ input: process.stdin });
let answered = false;
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.type === 'control_request' && m.request.subtype === 'initialize') {
    if (!m.request.hooks) process.exit(4);
    setTimeout(() => {
      answered = true;
      process.stdout.write(JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: m.request_id, response: {} } }) + '\\n');
    }, 300);
  } else if (m.type === 'user') process.exit(answered ? 0 : 3);
});`;

describe("serve's CLI slot holds what the turn machine writes until the CLI answered its handshake", () => {
  it('a message written at once reaches a guarded claude only after its hooks are registered', async () => {
    const spec: PreparedSpawn = {
      command: execPath,
      args: ['-e', LATE_ANSWER],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      cwd: process.cwd(),
      files: [],
      toolHooks: { matcher: '.*', ask: false },
      checkTool: () => ({ allow: true }),
    };
    let exited!: (exit: CliExit) => void;
    const exit = new Promise<CliExit>((resolve) => (exited = resolve));
    const failed: string[] = [];
    const slot = CliSlot.start(1, 'claude', new ClaudeCodec(), Promise.resolve(spec), {
      onStarted: () => {},
      onReady: () => {},
      onOutput: () => {},
      onEvent: () => {},
      onExit: exited,
      onSpawnFailed: (error) => failed.push(error.message),
    });
    slot.open();
    slot.run((p) => p.sendUserMessage({ text: 'hello' }));
    expect((await exit).code).toBe(0);
    expect(failed).toEqual([]);
  });
});
