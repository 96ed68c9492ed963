import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterFor, type AgentEvent, type Backend } from '@switchyard/protocol';
import { CliProcess } from '../src/cli/cli-process.ts';
import { locateCli } from '../src/cli/locate.ts';
import { type Script, startOfflineModel } from '@switchyard/offline-model';
import { guardSelfTest, runGuardCanary } from '../src/sandbox/canary.ts';
import { startModelRoute } from '../src/sandbox/model-proxy.ts';
import { GUARD_DIR, Sandbox } from '../src/sandbox/sandbox.ts';

// The guard inside the real CLIs, and what happens when it is broken: every
// failure must end with the tool refused or the CLI not running — never a
// tool call that goes through unguarded.

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-sbcli-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the guard, broken on purpose. */
function brokenGuard(name: string, file: string, content: string | null): string {
  const dir = join(root, name);
  cpSync(GUARD_DIR, dir, { recursive: true });
  if (content === null) rmSync(join(dir, file));
  else writeFileSync(join(dir, file), content);
  return dir;
}

const baseEnv = { PATH: process.env.PATH };

describe.each(['claude', 'pi'] as const)('%s: the guard canary', (backend) => {
  it('under bubblewrap the real guard blocks the canary and allows a read inside the workspace', async () => {
    expect(
      await runGuardCanary({
        backend,
        executable: locateCli(backend),
        sandbox: new Sandbox({ mode: 'bubblewrap' }),
        baseEnv,
      }),
    ).toEqual({ ok: true });
  });

  it('the self-test at runner start passes with the real guard, and fails with a broken one', async () => {
    expect(await guardSelfTest(new Sandbox({ mode: 'container' }))).toEqual({ ok: true });
    const dir = brokenGuard(`selftest-${backend}`, 'rules.ts', "throw new Error('broken on purpose');");
    const result = await guardSelfTest(new Sandbox({ mode: 'container', guardDir: dir }));
    expect(result).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/guard hook .* did not block|does not load/),
    });
  });
});

describe('the self-test at runner start covers the backends the runner may start', () => {
  it('a broken claude hook fails a claude runner’s self-test, not a pi runner’s; a broken pi extension the other way round', async () => {
    const hook = brokenGuard('selftest-scope-hook', 'claude-hook.ts', 'process.exit(0);');
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: hook }), ['pi'])).toEqual({ ok: true });
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: hook }), ['claude'])).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/guard hook .* did not block/),
    });
    const ext = brokenGuard('selftest-scope-ext', 'pi-extension.ts', 'export default 1;');
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: ext }), ['claude'])).toEqual({ ok: true });
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: ext }), ['pi'])).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no default export/),
    });
    // Both, as the probe asks: either one broken fails it.
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: hook }))).toMatchObject({ ok: false });
  });
});

describe('claude with a broken guard fails closed', () => {
  it.each([
    [
      'rules.ts throws at load',
      'rules.ts',
      "throw new Error('broken on purpose');",
      /internal error.*broken on purpose/,
    ],
    ['rules.ts missing (passes no file check: the hook is what is tested)', 'rules.ts', null, /internal error/],
    ['the hook itself has a syntax error: `|| exit 2`', 'claude-hook.ts', 'this is not javascript (', /SyntaxError/],
  ])('%s: every tool call is refused, nothing leaks', async (_name, file, content, reason) => {
    const dir = brokenGuard(`claude-${file}-${content === null ? 'gone' : 'bad'}`, file, content);
    // Sandbox.prepare would refuse a missing file; spawn around it to see what claude itself does.
    const sandbox = new Sandbox({ mode: 'none', guardDir: dir });
    const r = await drive('claude', sandbox, { skipPrepareChecks: true });
    expect(r.results.length).toBe(2);
    for (const res of r.results) expect(res).toMatchObject({ isError: true, output: expect.stringMatching(reason) });
    expect(r.all).not.toContain(r.outsideToken);
    expect(r.all).not.toContain(r.insideToken);
  });

  it('the canary reports it instead of claiming the guard is loaded', async () => {
    const dir = brokenGuard('claude-canary', 'rules.ts', "throw new Error('broken on purpose');");
    const result = await runGuardCanary({
      backend: 'claude',
      executable: locateCli('claude'),
      sandbox: new Sandbox({ mode: 'bubblewrap', guardDir: dir }),
      baseEnv,
    });
    expect(result).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/also refused a read inside the workspace/),
    });
  });
});

describe('claude meets its guard hook on every call but an allowed shell call (approval mode auto)', () => {
  // The guard does not parse shell, so claude is not made to start a hook process per shell call
  // (protocol/src/claude/spawn.ts claudeHookMatcher). Every other call still meets it.
  // A command that starts with a file: URL is one the hook refuses (its rule for every string of
  // every call); run, the shell just fails to find that command and goes on.
  it('a shell command the hook would refuse runs; a read outside the workspace is refused', async () => {
    const r = await drive('claude', new Sandbox({ mode: 'bubblewrap' }), {
      before: [{ tool: 'shell', command: 'file:///etc/hostname 2>/dev/null; echo shell-ran-unhooked' }],
    });
    expect(r.results.length).toBe(3);
    expect(r.results[0]).toMatchObject({ isError: false, output: expect.stringContaining('shell-ran-unhooked') });
    expect(r.results[1]).toMatchObject({ isError: true, output: expect.stringContaining('switchyard guard:') });
    expect(r.all).not.toContain(r.outsideToken);
    expect(r.all).toContain(r.insideToken);
  });
});

describe('pi with a broken guard never starts', () => {
  it.each([
    ['rules.ts with a syntax error', 'rules.ts', 'export const = ;', /Failed to load extension .*pi-extension\.ts/],
    ['rules.ts throws at load', 'rules.ts', "throw new Error('broken on purpose');", /broken on purpose/],
  ])('%s: pi exits before reading a command, naming the guard', async (_name, file, content, reason) => {
    const dir = brokenGuard(`pi-${file}-${String(content).length}`, file, content);
    const result = await runGuardCanary({
      backend: 'pi',
      executable: locateCli('pi'),
      sandbox: new Sandbox({ mode: 'bubblewrap', guardDir: dir }),
      baseEnv,
    });
    expect(result).toMatchObject({ ok: false, problem: expect.stringMatching(reason) });
  });

  it('no policy in the environment: pi refuses to load the guard and exits', async () => {
    const r = await drive('pi', new Sandbox({ mode: 'none' }), { skipPrepareChecks: true, noPolicy: true });
    expect(r.exit?.code).toBe(1);
    expect(r.exit?.stderrHead).toMatch(/Failed to load extension .*pi-extension\.ts.*switchyard guard: no policy/s);
    expect(r.results).toEqual([]);
  });
});

describe('pi: a tmp dir that outlives a start cannot replace the guard', () => {
  // In the production container the CLI's /tmp is a volume of the task: what the agent writes there
  // is still there when pi starts again in the same task. pi compiles extensions with jiti, whose
  // cache would live there, and jiti trusts an entry whose last line names its version and the
  // source's hash, both of which the agent can read.
  it('a compiled guard planted where jiti caches is not what pi loads', async () => {
    const tmp = mkdtempSync(join(root, 'pi-tmp-'));
    // jiti's own entry for the guard, made as pi made it before (cache on, compiled by jiti)...
    await drive('pi', new Sandbox({ mode: 'none' }), {
      env: { TMPDIR: tmp, JITI_FS_CACHE: 'true', JITI_TRY_NATIVE: 'false' },
    });
    const entry = readdirSync(join(tmp, 'jiti')).find((f) => f.startsWith('guard-pi-extension.'));
    if (entry === undefined) throw new Error(`jiti cached no guard entry in ${tmp}/jiti`);
    // ...rewritten into an extension that lets everything through, keeping the line jiti checks.
    const genuine = readFileSync(join(tmp, 'jiti', entry), 'utf8');
    const trailer = genuine.slice(genuine.lastIndexOf(' /* v'));
    writeFileSync(
      join(tmp, 'jiti', entry),
      `"use strict";Object.defineProperty(exports, "__esModule", { value: true });exports.default = function () {};${trailer}`,
    );

    const r = await drive('pi', new Sandbox({ mode: 'none' }), { env: { TMPDIR: tmp } });
    expect(r.results[0]).toMatchObject({ isError: true, output: expect.stringContaining('switchyard guard:') });
    expect(r.all).not.toContain(r.outsideToken);
    expect(r.all).toContain(r.insideToken);
  });
});

describe('the runner refuses to spawn without the guard', () => {
  it('a missing guard file: nothing is spawned, the error names the file', async () => {
    const dir = brokenGuard('prepare-missing', 'resolve.ts', null);
    const result = await runGuardCanary({
      backend: 'claude',
      executable: locateCli('claude'),
      sandbox: new Sandbox({ mode: 'bubblewrap', guardDir: dir }),
      baseEnv,
    });
    expect(result).toEqual({
      ok: false,
      problem: expect.stringContaining(`guard file ${dir}/resolve.ts is missing or unreadable`),
    });
  });
});

/**
 * Two scripted reads (outside, then inside the workspace) against a CLI spawned with this sandbox's
 * guard, after the tool calls in `before`.
 */
async function drive(
  backend: Backend,
  sandbox: Sandbox,
  o: { skipPrepareChecks?: boolean; noPolicy?: boolean; env?: Record<string, string>; before?: Script[] },
) {
  const dir = mkdtempSync(join(root, `${backend}-`));
  const dirs = { workspace: join(dir, 'ws'), home: join(dir, 'home'), configDir: join(dir, 'cfg') };
  for (const d of Object.values(dirs)) mkdirSync(d);
  const outsideToken = `OUTSIDE-${Math.random()}`;
  const insideToken = `INSIDE-${Math.random()}`;
  writeFileSync(join(dir, 'outside.txt'), outsideToken);
  writeFileSync(join(dirs.workspace, 'inside.txt'), insideToken);
  const model = await startOfflineModel();
  model.enqueue(
    ...(o.before ?? []),
    { tool: 'read', path: join(dir, 'outside.txt') },
    { tool: 'read', path: join(dirs.workspace, 'inside.txt') },
    { text: 'done' },
  );
  const adapter = adapterFor(backend);
  const route = await startModelRoute(sandbox.mode, model.url, undefined);
  let spec = adapter.spawnSpec({
    executable: locateCli(backend),
    ...dirs,
    modelBaseUrl: route.baseUrl,
    modelApiKey: route.apiKey,
    oneShot: true,
    guard: sandbox.guardOption(backend),
    baseEnv,
  });
  if (!o.noPolicy)
    spec = {
      ...spec,
      env: { ...spec.env, SWITCHYARD_GUARD_POLICY: JSON.stringify(sandbox.policy({ backend, ...dirs })) },
    };
  if (!o.skipPrepareChecks) spec = await sandbox.prepare(spec, { backend, ...dirs, modelSocket: route.socketPath });
  if (o.env) spec = { ...spec, env: { ...spec.env, ...o.env } };
  const events: AgentEvent[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const proc = await CliProcess.start(spec, adapter.createCodec(), {
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'turn.done') done();
    },
  });
  proc.sendUserMessage({ text: 'go' });
  await Promise.race([finished, proc.exited]);
  proc.closeInput();
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  const exit = await proc.exited;
  clearTimeout(timer);
  await route.close();
  await model.close();
  const results = events.filter((e): e is Extract<AgentEvent, { type: 'tool.result' }> => e.type === 'tool.result');
  return { results, exit, all: JSON.stringify(events), outsideToken, insideToken };
}
