import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildClaudeHook } from '../scripts/build-bundle.ts';
import { policyEnv, POLICY_ENV, type GuardPolicy } from '../src/sandbox/guard/policy.ts';
import switchyardGuard from '../src/sandbox/guard/pi-extension.ts';
import { GUARD_DIR } from '../src/sandbox/sandbox.ts';

// The two entry points as the CLIs run them. claude's hook is a process whose
// exit code is the decision, and any exit but 0 or 2 FAILS OPEN in claude:
// these tests pin that the hook (as the adapter's command runs it) only ever
// exits 0 for an allowed call and 2 for everything else, both as the TypeScript
// entry (from source) and as the one-file build the bundle runs (runner/scripts/build-bundle.ts).

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-hook-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ws = join(root, 'ws');
mkdirSync(ws);
writeFileSync(join(ws, 'ok.txt'), 'ok');
const policy: GuardPolicy = { v: 1, backend: 'claude', workspace: ws, tools: ['Read', 'Write', 'Bash'] };
const hookBuilds = [
  ['the TypeScript entry', join(GUARD_DIR, 'claude-hook.ts')],
  ['the one-file build', await buildClaudeHook(join(root, 'build', 'claude-hook.cjs'))],
] as const;

/** Runs the hook exactly as claude does: /bin/sh -c "<node> <file> || exit 2", hook JSON on stdin. */
function runHook(
  stdin: string | Buffer,
  env: Record<string, string> = policyEnv(policy),
  file = join(GUARD_DIR, 'claude-hook.ts'),
) {
  const command = `'${process.execPath}' '${file}' || exit 2`;
  return new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    child.on('close', (code) => resolve({ code, stderr, stdout }));
  });
}

const hookInput = (tool_name: unknown, tool_input: unknown, extra: object = {}) =>
  JSON.stringify({ session_id: 's', cwd: ws, hook_event_name: 'PreToolUse', tool_name, tool_input, ...extra });

describe.each(hookBuilds)('claude hook, %s: exit 0 allows, exit 2 blocks with the reason on stderr', (_, file) => {
  it('allows a read inside the workspace with no output at all', async () => {
    expect(await runHook(hookInput('Read', { file_path: join(ws, 'ok.txt') }), undefined, file)).toEqual({
      code: 0,
      stderr: '',
      stdout: '',
    });
  });
  it('blocks a read outside it, naming why', async () => {
    const r = await runHook(hookInput('Read', { file_path: '/etc/passwd' }), undefined, file);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^switchyard guard: Read: \/etc\/passwd resolves to \/etc\/passwd, outside the session workspace/,
    );
  });
  it('lets the shell through to the OS wall', async () => {
    expect((await runHook(hookInput('Bash', { command: 'ls' }), undefined, file)).code).toBe(0);
  });
});

describe.each(hookBuilds)('claude hook, %s, never fails open', (_, file) => {
  const cases: Array<[string, string | Buffer, Record<string, string>?]> = [
    ['empty stdin', ''],
    ['not JSON', 'hello'],
    ['a JSON array', '[1,2]'],
    ['a JSON string', '"Read"'],
    ['null', 'null'],
    ['no tool_name', JSON.stringify({ tool_input: {} })],
    ['tool_name not a string', hookInput(7, {})],
    ['tool_input a string', hookInput('Read', '/etc/passwd')],
    ['path not a string', hookInput('Read', { file_path: ['/etc/passwd'] })],
    ['deeply nested input', hookInput('Write', JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`))],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe, 0x7b, 0x00])],
    ['tool off the allow-list', hookInput('WebFetch', { url: 'https://example.com' })],
    ['policy missing', hookInput('Read', { file_path: join(ws, 'ok.txt') }), {}],
    ['policy not JSON', hookInput('Read', { file_path: join(ws, 'ok.txt') }), { [POLICY_ENV]: '{' }],
    [
      'policy for a workspace that does not exist',
      hookInput('Read', { file_path: '/nope/x' }),
      policyEnv({ ...policy, workspace: '/nope' }),
    ],
  ];
  it('deeply nested input is refused as such', async () => {
    const r = await runHook(
      hookInput('Write', JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`)),
      undefined,
      file,
    );
    expect(r).toMatchObject({ code: 2, stderr: expect.stringMatching(/nested too deeply/) });
  });
  it.each(cases)('%s → exit 2', async (_name, stdin, env) => {
    const r = await runHook(stdin, env, file);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^switchyard guard: /);
  });

  it('a huge input is refused, not crashed on', async () => {
    const big = hookInput('Write', { file_path: join(ws, 'big.txt'), content: 'x'.repeat(17 * 1024 * 1024) });
    const r = await runHook(big, undefined, file);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/too large/);
  });
});

describe('claude hook: a broken guard install blocks instead of crashing open', () => {
  const copy = join(root, 'guard-copy');
  const fresh = () => {
    rmSync(copy, { recursive: true, force: true });
    cpSync(GUARD_DIR, copy, { recursive: true });
  };
  const allowedCall = hookInput('Read', { file_path: join(ws, 'ok.txt') });
  it('control: the intact copy allows', async () => {
    fresh();
    expect((await runHook(allowedCall, undefined, join(copy, 'claude-hook.ts'))).code).toBe(0);
  });
  it('rules.ts missing → 2', async () => {
    fresh();
    rmSync(join(copy, 'rules.ts'));
    const r = await runHook(allowedCall, undefined, join(copy, 'claude-hook.ts'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/switchyard guard: internal error.*rules\.ts/);
  });
  it('rules.ts with a syntax error → 2', async () => {
    fresh();
    writeFileSync(join(copy, 'rules.ts'), 'export const = ;');
    expect((await runHook(allowedCall, undefined, join(copy, 'claude-hook.ts'))).code).toBe(2);
  });
  it('rules.ts that throws at load → 2', async () => {
    fresh();
    writeFileSync(join(copy, 'rules.ts'), "throw new Error('load-time bomb');");
    const r = await runHook(allowedCall, undefined, join(copy, 'claude-hook.ts'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/load-time bomb/);
  });
  it("built into one file, rules that throw at load still → 2 (evaluated inside the hook's try)", async () => {
    fresh();
    writeFileSync(join(copy, 'rules.ts'), "throw new Error('load-time bomb');");
    const built = await buildClaudeHook(join(root, 'build-bomb', 'claude-hook.cjs'), join(copy, 'claude-hook.ts'));
    const r = await runHook(allowedCall, undefined, built);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/switchyard guard: internal error.*load-time bomb/);
  });
  it('the hook file itself has a syntax error (node exits 1): `|| exit 2` blocks', async () => {
    fresh();
    writeFileSync(join(copy, 'claude-hook.ts'), 'this is not javascript (');
    const r = await runHook(allowedCall, undefined, join(copy, 'claude-hook.ts'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/SyntaxError/);
  });
  it('the hook file is missing → 2', async () => {
    expect((await runHook(allowedCall, undefined, join(copy, 'gone.ts'))).code).toBe(2);
  });
  it('and without `|| exit 2`, a crashing hook would exit 1: why the suffix exists', async () => {
    fresh();
    writeFileSync(join(copy, 'claude-hook.ts'), 'this is not javascript (');
    const child = spawn(process.execPath, [join(copy, 'claude-hook.ts')], { stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(allowedCall);
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(1);
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
