import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterFor, type AgentEvent, type Backend } from '@switchyard/protocol';
import type { PreparedSpawn } from '../src/cli/spawn.ts';
import { startReady } from '../src/cli/start-ready.ts';
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
        compileCache: undefined,
        sandbox: new Sandbox({ mode: 'bubblewrap' }),
        baseEnv,
      }),
    ).toEqual({ ok: true });
  });
});

describe('the self-test at runner start', () => {
  it('passes with the real guard, and fails with a broken pi extension', async () => {
    expect(await guardSelfTest(new Sandbox({ mode: 'container' }))).toEqual({ ok: true });
    const dir = brokenGuard('selftest-pi', 'rules.ts', "throw new Error('broken on purpose');");
    const result = await guardSelfTest(new Sandbox({ mode: 'container', guardDir: dir }));
    expect(result).toMatchObject({ ok: false, problem: expect.stringMatching(/does not load/) });
  });

  it('covers the backends the runner may start: a broken pi extension fails a pi runner’s, not a claude runner’s', async () => {
    // claude's hooks are answered with the runner's own rules, not with what pi loads from the guard's directory.
    const ext = brokenGuard('selftest-scope-ext', 'pi-extension.ts', 'export default 1;');
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: ext }), ['claude'])).toEqual({ ok: true });
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: ext }), ['pi'])).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no default export/),
    });
    // Both, as the probe asks: either one broken fails it.
    expect(await guardSelfTest(new Sandbox({ mode: 'container', guardDir: ext }))).toMatchObject({ ok: false });
  });
});

describe("claude's guard, answered by the runner, fails closed", () => {
  it('a check that throws: every tool call is refused, nothing leaks', async () => {
    const r = await drive('claude', new Sandbox({ mode: 'none' }), {
      checkTool: () => {
        throw new Error('broken on purpose');
      },
    });
    expect(r.results.length).toBe(2);
    for (const res of r.results)
      expect(res).toMatchObject({ isError: true, output: expect.stringMatching(/internal error.*broken on purpose/) });
    expect(r.all).not.toContain(r.outsideToken);
    expect(r.all).not.toContain(r.insideToken);
  });

  it('a spec with hooks but nothing to answer them: claude is not started', async () => {
    await expect(drive('claude', new Sandbox({ mode: 'none' }), { skipPrepareChecks: true })).rejects.toThrow(
      /guard hooks have nothing to answer them/,
    );
  });
});

describe('claude meets its guard on every call but an allowed shell call (approval mode auto)', () => {
  // The guard does not parse shell, so claude's shell calls are not sent to it
  // (protocol/src/claude/tool-hooks.ts toolHooksFor). Every other call still meets it.
  // A command that starts with a file: URL is one the guard refuses (its rule for every string of
  // every call); run, the shell just fails to find that command and goes on.
  it('a shell command the guard would refuse runs; a read outside the workspace is refused', async () => {
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

describe("claude's guard decides on the files the sandboxed CLI sees, not the runner's", () => {
  // Under bubblewrap the CLI's /tmp is its own. A link at the same path on the host that points into
  // the workspace must not make the runner allow a path that, in the sandbox, leads elsewhere.
  it("a path through a link in the sandbox's /tmp is refused where the host's link would have allowed it", async () => {
    const name = `sy-view-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const hostLink = join('/tmp', name);
    const dirs = await drive('claude', new Sandbox({ mode: 'bubblewrap' }), {
      before: [{ tool: 'shell', command: `ln -s /etc /tmp/${name} && echo linked-in-sandbox` }],
      reads: (d) => [join(hostLink, 'hostname'), join(d.workspace, 'inside.txt')],
      setup: (d) => symlinkSync(d.workspace, hostLink),
    }).finally(() => rmSync(hostLink, { force: true }));
    expect(dirs.results[0]).toMatchObject({ isError: false, output: expect.stringContaining('linked-in-sandbox') });
    expect(dirs.results[1]).toMatchObject({
      isError: true,
      output: expect.stringMatching(/switchyard guard: Read: .* resolves to \/etc\/hostname, outside/),
    });
    expect(dirs.all).toContain(dirs.insideToken);
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
      compileCache: undefined,
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
      compileCache: undefined,
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
 * Two scripted reads (outside, then inside the workspace, unless `reads` names others) against a
 * CLI spawned with this sandbox's guard, after the tool calls in `before`. `checkTool` stands in
 * for the check the sandbox attaches (claude).
 */
async function drive(
  backend: Backend,
  sandbox: Sandbox,
  o: {
    skipPrepareChecks?: boolean;
    noPolicy?: boolean;
    env?: Record<string, string>;
    before?: Script[];
    checkTool?: PreparedSpawn['checkTool'];
    reads?: (dirs: { workspace: string; outside: string }) => string[];
    setup?: (dirs: { workspace: string }) => void;
  },
) {
  const dir = mkdtempSync(join(root, `${backend}-`));
  const dirs = { workspace: join(dir, 'ws'), home: join(dir, 'home'), configDir: join(dir, 'cfg') };
  for (const d of Object.values(dirs)) mkdirSync(d);
  const outsideToken = `OUTSIDE-${Math.random()}`;
  const insideToken = `INSIDE-${Math.random()}`;
  writeFileSync(join(dir, 'outside.txt'), outsideToken);
  writeFileSync(join(dirs.workspace, 'inside.txt'), insideToken);
  o.setup?.(dirs);
  const reads = o.reads?.({ workspace: dirs.workspace, outside: join(dir, 'outside.txt') }) ?? [
    join(dir, 'outside.txt'),
    join(dirs.workspace, 'inside.txt'),
  ];
  const model = await startOfflineModel();
  model.enqueue(...(o.before ?? []), ...reads.map((path) => ({ tool: 'read' as const, path })), { text: 'done' });
  const adapter = adapterFor(backend);
  const route = await startModelRoute(sandbox.mode, model.url, undefined);
  try {
    let spec: PreparedSpawn = adapter.spawnSpec({
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
    if (o.checkTool) spec = { ...spec, checkTool: o.checkTool };
    const events: AgentEvent[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const onEvent = (e: AgentEvent) => {
      events.push(e);
      if (e.type === 'turn.done') done();
    };
    const started = await startReady(backend, spec, adapter.createCodec(), { onEvent }, 60_000);
    // pi without a policy exits before it reads a command: that exit is the result.
    if (!started.ok && !o.noPolicy) throw new Error(started.problem);
    const proc = started.ok ? started.proc : undefined;
    proc?.sendUserMessage({ text: 'go' });
    await Promise.race([finished, proc?.exited]);
    proc?.closeInput();
    const timer = setTimeout(() => proc?.kill('SIGKILL'), 5000);
    const exit = started.ok ? await started.proc.exited : started.exit;
    clearTimeout(timer);
    const results = events.filter((e): e is Extract<AgentEvent, { type: 'tool.result' }> => e.type === 'tool.result');
    return { results, exit, all: JSON.stringify(events), outsideToken, insideToken };
  } finally {
    await route.close();
    await model.close();
  }
}
