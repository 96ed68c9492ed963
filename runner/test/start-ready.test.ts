import { execPath } from 'node:process';
import { ClaudeCodec } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import type { PreparedSpawn } from '../src/cli/spawn.ts';
import { startReady } from '../src/cli/start-ready.ts';

// startReady (probe, once, the canary): the CLI is ready once it answered its handshake, and a CLI
// that dies first is reported with its exit at once, not after the timeout (set far beyond the
// test's own here, so waiting it out fails the test).
const spec = (script: string): PreparedSpawn => ({
  command: execPath,
  args: ['-e', script],
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  cwd: process.cwd(),
  files: [],
  toolHooks: { matcher: '.*', ask: false },
  checkTool: () => ({ allow: true }),
});
const NEVER = 10 * 60_000;

describe('startReady', () => {
  it('is ready when a stand-in claude answers the initialize that carries the guard hooks', async () => {
    const answers = `
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.request?.subtype !== 'initialize' || !m.request.hooks) process.exit(4);
  process.stdout.write(JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: m.request_id, response: {} } }) + '\\n');
});`;
    const started = await startReady('claude', spec(answers), new ClaudeCodec(), { onEvent: () => {} }, NEVER);
    if (!started.ok) throw new Error(started.problem);
    started.proc.closeInput();
    expect((await started.proc.exited).code).toBe(0);
  });

  it('a CLI that exits before it answers is reported with its stderr and exit', async () => {
    const dies = "process.stderr.write('no model configured\\n'); process.exit(3);";
    const started = await startReady('claude', spec(dies), new ClaudeCodec(), { onEvent: () => {} }, NEVER);
    expect(started).toMatchObject({
      ok: false,
      problem: 'the CLI exited during startup: no model configured',
      exit: { code: 3 },
    });
  }, 20_000);
});
