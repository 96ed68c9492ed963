import { execPath } from 'node:process';
import { ClaudeCodec, type CliExit } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import type { PreparedSpawn } from '../src/cli/spawn.ts';
import { startReady } from '../src/cli/start-ready.ts';
import { CliSlot } from '../src/serve/cli-slot.ts';

// claude's guard hooks are registered by its readiness handshake (runner/src/cli/readiness.ts), so
// nothing but the handshake may reach a guarded CLI before it answered it: not in startReady
// (probe, once, the canary), not in serve's CLI slot. Stand-in CLIs (node scripts) answer or not.

/** A guarded claude's spec running `script` as the CLI. */
const standIn = (script: string): PreparedSpawn => ({
  command: execPath,
  args: ['-e', script],
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  cwd: process.cwd(),
  files: [],
  toolHooks: { matcher: '.*', ask: false },
  checkTool: () => ({ allow: true }),
});
/** startReady's timeout, far beyond the test's own: a test that waits it out fails. */
const NEVER = 10 * 60_000;

describe('startReady: ready on the answer, or why not at once', () => {
  it('is ready when a stand-in claude answers the initialize that carries the guard hooks', async () => {
    const answers = `
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.request?.subtype !== 'initialize' || !m.request.hooks) process.exit(4);
  process.stdout.write(JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: m.request_id, response: {} } }) + '\\n');
});`;
    const started = await startReady('claude', standIn(answers), new ClaudeCodec(), { onEvent: () => {} }, NEVER);
    if (!started.ok) throw new Error(started.problem);
    started.proc.closeInput();
    expect((await started.proc.exited).code).toBe(0);
  });

  it('a CLI that exits before it answers is reported with its stderr and exit', async () => {
    const dies = "process.stderr.write('no model configured\\n'); process.exit(3);";
    const started = await startReady('claude', standIn(dies), new ClaudeCodec(), { onEvent: () => {} }, NEVER);
    expect(started).toMatchObject({
      ok: false,
      problem: 'the CLI exited during startup: no model configured',
      exit: { code: 3 },
    });
  }, 20_000);
});

// Answers its `initialize` late; exits 0 only if a message came after its answer, 3 if one came before.
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
    let exited!: (exit: CliExit) => void;
    const exit = new Promise<CliExit>((resolve) => (exited = resolve));
    const failed: string[] = [];
    const slot = CliSlot.start(1, 'claude', new ClaudeCodec(), Promise.resolve(standIn(LATE_ANSWER)), {
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
