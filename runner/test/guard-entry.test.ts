import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterFor, ClaudeCodec, GUARD_CALLBACK_ID } from '@switchyard/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { guardArming } from '../src/cli/cli-process.ts';
import { POLICY_ENV, type GuardPolicy } from '../src/sandbox/guard/policy.ts';
import switchyardGuard from '../src/sandbox/guard/pi-extension.ts';
import { Sandbox } from '../src/sandbox/sandbox.ts';

// The guard's two entry points as the CLIs meet them. claude's: the runner answers each hook
// call claude sends over its control protocol with the check Sandbox.prepare attaches, and claude
// RUNS a call whose answer is an error or no decision, so these tests pin that a call is allowed
// only when the rules allow it and refused, with a reason, in every other case. pi's: the
// extension's tool_call handler.

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-hook-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ws = join(root, 'ws');
mkdirSync(ws);
writeFileSync(join(ws, 'ok.txt'), 'ok');
const policy: GuardPolicy = { v: 1, backend: 'claude', workspace: ws, tools: ['Read', 'Write', 'Bash'] };

/** A claude codec armed as CliProcess arms it, from the spec Sandbox.prepare returns. */
async function armedCodec(): Promise<ClaudeCodec> {
  const spec = adapterFor('claude').spawnSpec({
    executable: { command: '/bin/true' },
    workspace: ws,
    home: join(root, 'home'),
    configDir: join(root, 'cfg'),
    modelBaseUrl: 'http://127.0.0.1:9',
    modelApiKey: 'k',
    allowedTools: policy.tools,
    guard: 'runner',
  });
  const prepared = await new Sandbox({ mode: 'none' }).prepare(spec, {
    backend: 'claude',
    workspace: ws,
    home: join(root, 'home'),
    configDir: join(root, 'cfg'),
    tools: policy.tools,
  });
  if (prepared.toolHooks === undefined) throw new Error('the spec is not guarded');
  const codec = new ClaudeCodec();
  guardArming(prepared, codec)(process.pid);
  return codec;
}

/** claude's hook call for this tool and input; the codec's answer as claude reads it. */
function ask(codec: ClaudeCodec, tool_name: unknown, tool_input: unknown) {
  const line = JSON.stringify({
    type: 'control_request',
    request_id: 'r1',
    request: {
      subtype: 'hook_callback',
      callback_id: GUARD_CALLBACK_ID,
      input: { session_id: 's', cwd: ws, hook_event_name: 'PreToolUse', tool_name, tool_input },
    },
  });
  expect(codec.parse(line)).toEqual([]);
  const [answer, ...more] = codec.takeInput();
  expect(more).toEqual([]);
  const response = JSON.parse(answer ?? '').response;
  expect(response.subtype).toBe('success');
  return response.response as { hookSpecificOutput?: { permissionDecision: string; permissionDecisionReason: string } };
}

describe("claude's guard, answered by the runner: no decision allows, a deny carries the reason", () => {
  it('allows a read inside the workspace with no decision at all', async () => {
    expect(ask(await armedCodec(), 'Read', { file_path: join(ws, 'ok.txt') })).toEqual({});
  });
  it('refuses a read outside it, naming why', async () => {
    const answer = ask(await armedCodec(), 'Read', { file_path: '/etc/passwd' });
    expect(answer.hookSpecificOutput?.permissionDecision).toBe('deny');
    expect(answer.hookSpecificOutput?.permissionDecisionReason).toMatch(
      /^switchyard guard: Read: \/etc\/passwd resolves to \/etc\/passwd, outside the session workspace/,
    );
  });
  it('lets the shell through to the OS wall', async () => {
    expect(ask(await armedCodec(), 'Bash', { command: 'ls' })).toEqual({});
  });
});

describe("claude's guard, answered by the runner, never lets a malformed call through", () => {
  const cases: Array<[string, unknown, unknown, RegExp]> = [
    ['tool_name not a string', 7, {}, /no tool_name/],
    ['tool_input a string', 'Read', '/etc/passwd', /^switchyard guard: /],
    ['path not a string', 'Read', { file_path: ['/etc/passwd'] }, /^switchyard guard: /],
    ['deeply nested input', 'Write', JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`), /nested too deeply/],
    ['tool off the allow-list', 'WebFetch', { url: 'https://example.com' }, /allow-list/],
    ['a path that does not exist outside', 'Read', { file_path: '/nope/x' }, /outside/],
  ];
  it.each(cases)('%s → deny', async (_name, tool, input, reason) => {
    const answer = ask(await armedCodec(), tool, input);
    expect(answer.hookSpecificOutput?.permissionDecision).toBe('deny');
    expect(answer.hookSpecificOutput?.permissionDecisionReason).toMatch(reason);
  });
});

describe('pi extension', () => {
  type Handler = (event: { toolName: string; input: unknown }, ctx: { cwd?: string }) => unknown;
  const load = (env: string | undefined) => {
    const handlers: Handler[] = [];
    const saved = process.env[POLICY_ENV];
    if (env === undefined) delete process.env[POLICY_ENV];
    else process.env[POLICY_ENV] = env;
    try {
      switchyardGuard({ on: (_name: string, h: Handler) => void handlers.push(h) } as never);
    } finally {
      if (saved === undefined) delete process.env[POLICY_ENV];
      else process.env[POLICY_ENV] = saved;
    }
    return handlers;
  };
  const piPolicy = JSON.stringify({ ...policy, backend: 'pi', tools: ['read', 'bash'] });

  it('registers one tool_call handler that blocks with the reason and passes allowed calls', () => {
    const [h, ...rest] = load(piPolicy);
    expect(rest).toEqual([]);
    expect(h?.({ toolName: 'read', input: { path: 'ok.txt' } }, { cwd: ws })).toBeUndefined();
    expect(h?.({ toolName: 'read', input: { path: '../../etc/passwd' } }, { cwd: ws })).toEqual({
      block: true,
      reason: expect.stringMatching(/^switchyard guard: read: .*outside/),
    });
    expect(h?.({ toolName: 'write', input: { path: 'x' } }, { cwd: ws })).toEqual({
      block: true,
      reason: expect.stringMatching(/allow-list/),
    });
  });
  it('refuses to load without a valid policy (pi then exits before reading a command)', () => {
    expect(() => load(undefined)).toThrow(/switchyard guard: no policy/);
    expect(() => load('nope')).toThrow(/not JSON/);
  });
});
