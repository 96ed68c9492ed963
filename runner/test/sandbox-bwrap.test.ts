import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PI_DEFAULT_TOOLS, type SpawnSpec } from '@switchyard/protocol';
import { MODEL_ROUTE_SCRIPT, MODEL_SOCKET, MODEL_URL, wrapWithBwrap, type BwrapLayout } from '../src/sandbox/bwrap.ts';
import { startModelRoute } from '../src/sandbox/model-proxy.ts';
import { startOfflineModel } from '@switchyard/offline-model';
import { missingRunnerCaps, wrapWithUidDrop } from '../src/sandbox/uid-drop.ts';
import { GUARD_DIR, installRoot, Sandbox, SandboxError, sandboxModeFrom } from '../src/sandbox/sandbox.ts';

const spec: SpawnSpec = {
  command: '/opt/cli/bin/cli',
  args: ['--x'],
  env: { PATH: '/usr/bin' },
  cwd: '/s/ws',
  files: [{ path: '/s/cfg/settings.json', content: '{}' }],
};
const layout: BwrapLayout = {
  bwrap: '/usr/bin/bwrap',
  uid: 0,
  writable: ['/s/ws', '/s/home', '/s/cfg'],
  readOnly: ['/opt/cli', '/opt/cli/bin', '/g'],
  readOnlyFiles: ['/s/cfg/settings.json'],
  system: { '/usr': { kind: 'dir' }, '/bin': { kind: 'symlink', target: 'usr/bin' }, '/lib64': { kind: 'missing' } },
  etc: { '/etc/passwd': { kind: 'file' } },
};

describe('wrapWithBwrap (pure)', () => {
  const w = wrapWithBwrap(spec, layout);
  const a = w.args;
  const at = (...seq: string[]) => a.findIndex((_, i) => seq.every((s, j) => a[i + j] === s));
  it('runs bwrap, then the CLI unchanged after --', () => {
    expect(w.command).toBe('/usr/bin/bwrap');
    expect(a.slice(a.indexOf('--') + 1)).toEqual(['/opt/cli/bin/cli', '--x']);
    expect(w.env).toEqual(spec.env);
    expect(at('--chdir', '/s/ws')).toBeGreaterThan(0);
  });
  it('own PID and network namespaces, dies with the runner, new session, no capabilities', () => {
    for (const f of ['--unshare-pid', '--unshare-net', '--die-with-parent', '--new-session']) expect(a).toContain(f);
    expect(at('--cap-drop', 'ALL')).toBeGreaterThanOrEqual(0);
    expect(a).not.toContain('--unshare-user'); // root needs none
    expect(wrapWithBwrap(spec, { ...layout, uid: 1000 }).args).toContain('--unshare-user');
  });
  it('builds the root by allow-list: no bind of / and nothing of the host but what is listed', () => {
    expect(at('--ro-bind', '/', '/')).toBe(-1);
    expect(at('--ro-bind', '/usr', '/usr')).toBeGreaterThanOrEqual(0);
    expect(at('--symlink', 'usr/bin', '/bin')).toBeGreaterThanOrEqual(0);
    expect(a.join(' ')).not.toContain('/lib64');
    expect(at('--ro-bind-try', '/etc/passwd', '/etc/passwd')).toBeGreaterThanOrEqual(0);
    expect(a.filter((x) => x.startsWith('/etc/'))).toEqual(['/etc/passwd', '/etc/passwd']);
  });
  it('an /etc symlink into the bound system stays a symlink, to its realpath; any other entry is bound; a missing one is left out', () => {
    const e = wrapWithBwrap(spec, {
      ...layout,
      etc: {
        '/etc/localtime': {
          kind: 'symlink',
          target: '/usr/share/zoneinfo/Etc/UTC',
          resolved: '/usr/share/zoneinfo/Etc/UTC',
        },
        '/etc/os-release': { kind: 'symlink', target: '../usr/lib/os-release', resolved: '/usr/lib/os-release' },
        '/etc/resolv.conf': { kind: 'symlink', target: '/run/resolv.conf', resolved: '/run/resolv.conf' },
        '/etc/hosts': { kind: 'symlink', target: '/usrx/hosts', resolved: '/usrx/hosts' },
        '/etc/gai.conf': { kind: 'symlink', target: '/gone' },
        '/etc/passwd': { kind: 'file' },
        '/etc/timezone': { kind: 'missing' },
      },
    }).args;
    const i = (...seq: string[]) => e.findIndex((_, k) => seq.every((x, j) => e[k + j] === x));
    expect(i('--symlink', '/usr/share/zoneinfo/Etc/UTC', '/etc/localtime')).toBeGreaterThan(0);
    expect(i('--symlink', '/usr/lib/os-release', '/etc/os-release')).toBeGreaterThan(0);
    for (const bound of ['/etc/resolv.conf', '/etc/hosts', '/etc/gai.conf', '/etc/passwd'])
      expect(i('--ro-bind-try', bound, bound), bound).toBeGreaterThan(0);
    expect(e).not.toContain('/etc/timezone');
  });
  it('with a model route: the proxy socket bound in, socat and setpriv read-only, the CLI started by the route script', () => {
    const m = wrapWithBwrap(spec, {
      ...layout,
      model: { socket: '/h/model.sock', socat: '/x/socat', setpriv: '/x/setpriv' },
    }).args;
    const i = (...seq: string[]) => m.findIndex((_, k) => seq.every((x, j) => m[k + j] === x));
    expect(m).toContain('--unshare-net');
    expect(i('--bind', '/h/model.sock', MODEL_SOCKET)).toBeGreaterThan(0);
    expect(i('--ro-bind', '/x/socat', '/x/socat')).toBeGreaterThan(0);
    expect(i('--ro-bind', '/x/setpriv', '/x/setpriv')).toBeGreaterThan(0);
    expect(m.slice(m.indexOf('--') + 1)).toEqual([
      '/bin/sh',
      '-c',
      MODEL_ROUTE_SCRIPT,
      'sh',
      '/x/setpriv',
      '/x/socat',
      '/opt/cli/bin/cli',
      '--x',
    ]);
  });
  it('the model route relays with Nagle off: a streamed answer is written to the CLI as it comes', () => {
    // What it saves is timing only (bench/runner --route, (6)), so the option itself is pinned.
    expect(MODEL_ROUTE_SCRIPT).toMatch(/ TCP-LISTEN:\S*,nodelay[ ,]/);
  });
  it('private /tmp first, read-only installs (nested ones folded), writable dirs, then config files read-only on top', () => {
    const tmp = at('--tmpfs', '/tmp');
    const ro = at('--ro-bind', '/opt/cli', '/opt/cli');
    const rw = at('--bind', '/s/ws', '/s/ws');
    const file = at('--ro-bind', '/s/cfg/settings.json', '/s/cfg/settings.json');
    expect(at('--ro-bind', '/opt/cli/bin', '/opt/cli/bin')).toBe(-1);
    expect(tmp).toBeLessThan(ro);
    expect(ro).toBeLessThan(rw);
    expect(at('--bind', '/s/cfg', '/s/cfg')).toBeLessThan(file);
  });
});

describe('Sandbox.prepare fails closed', () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-prep-')));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const paths = {
    backend: 'claude' as const,
    workspace: join(root, 'ws'),
    home: join(root, 'h'),
    configDir: join(root, 'c'),
  };
  // claude's spec with the guard: hooks its handshake registers and the runner answers.
  const guarded = (): SpawnSpec => ({ ...spec, toolHooks: { matcher: '.*', ask: false } });

  it('names the guard file that is missing, and spawns nothing', async () => {
    const dir = join(root, 'guard-missing');
    mkdirSync(dir);
    writeFileSync(join(dir, 'rules.ts'), '');
    const sb = new Sandbox({ mode: 'container', guardDir: dir });
    await expect(sb.prepare(guarded(), paths)).rejects.toThrow(
      new RegExp(`guard file ${dir}/pi-extension.ts is missing or unreadable`),
    );
    await expect(sb.prepare(guarded(), paths)).rejects.toBeInstanceOf(SandboxError);
  });
  it('refuses a spec that does not load the guard', async () => {
    const sb = new Sandbox({ mode: 'container' });
    await expect(sb.prepare(spec, paths)).rejects.toThrow(/registers no guard hooks for claude/);
    await expect(sb.prepare(spec, { ...paths, backend: 'pi' })).rejects.toThrow(
      new RegExp(`does not load the guard ${sb.piExtension}`),
    );
  });
  it('refuses to run without bubblewrap when bubblewrap is the wall', async () => {
    const sb = new Sandbox({ mode: 'bubblewrap', bwrap: '/nonexistent/bwrap' });
    await expect(sb.prepare(guarded(), paths)).rejects.toThrow(
      /bubblewrap \(\/nonexistent\/bwrap\) is not installed; run scripts\/setup-system.sh/,
    );
  });
  it("puts pi's policy in its environment; claude gets the check that answers its hooks instead", async () => {
    const sb = new Sandbox({ mode: 'none' });
    const pi = await sb.prepare({ ...spec, args: ['-e', sb.piExtension] }, { ...paths, backend: 'pi' });
    expect(JSON.parse(pi.env.SWITCHYARD_GUARD_POLICY ?? '')).toEqual({
      v: 1,
      backend: 'pi',
      workspace: paths.workspace,
      tools: PI_DEFAULT_TOOLS,
    });
    expect(pi.checkTool).toBeUndefined();
    const claude = await sb.prepare(guarded(), paths);
    expect(claude.env.SWITCHYARD_GUARD_POLICY).toBeUndefined();
    mkdirSync(paths.workspace, { recursive: true });
    const read = (file_path: string) =>
      claude.checkTool?.({ tool: 'Read', input: { file_path }, cwd: paths.workspace }, process.pid);
    expect(read(join(paths.workspace, 'a.txt'))).toEqual({ allow: true });
    expect(read('/etc/passwd')).toMatchObject({ allow: false, reason: expect.stringMatching(/outside/) });
  });
  it('container mode refuses without the runner capabilities or setpriv, and as root', async () => {
    const sb = new Sandbox({ mode: 'container', setpriv: '/nonexistent/setpriv' });
    const caps = await missingRunnerCaps();
    const uid = process.getuid?.() ?? 0;
    const expected =
      caps.length > 0
        ? /the runner lacks CAP_/
        : uid === 0 || uid === 10002
          ? /must run as its own non-root uid/
          : /setpriv \(\/nonexistent\/setpriv, util-linux\) is not installed/;
    await expect(sb.prepare(guarded(), paths)).rejects.toThrow(expected);
    await expect(sb.prepare(guarded(), paths)).rejects.toBeInstanceOf(SandboxError);
  });
  it('reads the runner capabilities from /proc/self/status', async () => {
    expect(await missingRunnerCaps('CapEff:\t00000000000000e2\n')).toEqual([]);
    expect(await missingRunnerCaps('CapEff:\t00000000000000c2\n')).toEqual(['CAP_KILL']);
    expect(await missingRunnerCaps('CapEff:\t00000000000000e0\n')).toEqual(['CAP_DAC_OVERRIDE']);
    expect(await missingRunnerCaps('')).toEqual(['CAP_DAC_OVERRIDE', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID']);
  });
  it('wraps the CLI in setpriv: its own uid, the shared group, no groups, no capabilities, no_new_privs', () => {
    const out = wrapWithUidDrop(spec, { setpriv: '/usr/bin/setpriv', uid: 10002, gid: 10001 });
    expect(out.command).toBe('/usr/bin/setpriv');
    expect(out.args).toEqual([
      '--reuid',
      '10002',
      '--regid',
      '10001',
      '--clear-groups',
      '--inh-caps',
      '-all',
      '--ambient-caps',
      '-all',
      '--no-new-privs',
      '--',
      '/opt/cli/bin/cli',
      '--x',
    ]);
    // The runner's files (the workspace, a cloned .git) are another uid's: the CLI's git trusts them.
    expect(out.env).toEqual({
      ...spec.env,
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'safe.directory',
      GIT_CONFIG_VALUE_0: '*',
    });
    expect({ ...out, command: spec.command, args: spec.args, env: spec.env }).toEqual(spec);
  });
  it('SWITCHYARD_SANDBOX picks the wall; bubblewrap unless told otherwise', () => {
    expect(sandboxModeFrom({})).toBe('bubblewrap');
    expect(sandboxModeFrom({ SWITCHYARD_SANDBOX: 'container' })).toBe('container');
    expect(sandboxModeFrom({ SWITCHYARD_SANDBOX: 'off' })).toEqual({ error: expect.stringMatching(/must be one of/) });
    expect(installRoot('/a/node_modules/@x/y/bin/cli')).toBe('/a/node_modules');
    expect(installRoot('/opt/tool/bin/tool')).toBe('/opt/tool/bin');
  });
});

/** `node -e` with a shell script as its argument: runs it, exits with its status. */
const RUN_SCRIPT =
  "process.exit(require('node:child_process').spawnSync('/bin/sh', ['-c', process.argv[1]], { stdio: 'inherit' }).status ?? 1)";

// The real thing: a shell under the layout the runner gives a CLI.
describe('under bubblewrap for real', () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-bwrap-')));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const d = { workspace: join(root, 'ws'), home: join(root, 'home'), configDir: join(root, 'cfg') };
  for (const p of Object.values(d)) mkdirSync(p);
  const other = join(root, 'other-session', 'ws');
  mkdirSync(other, { recursive: true });
  writeFileSync(join(other, 'secret.txt'), 'OTHER-SESSION-SECRET');
  writeFileSync(join(d.configDir, 'settings.json'), '{"hooks":"ours"}');

  async function sh(
    script: string,
    o: { guard?: boolean; modelSocket?: string | undefined; socat?: string; env?: Record<string, string> } = {},
  ) {
    const { guard = false, modelSocket, socat } = o;
    const sb = new Sandbox({ mode: 'bubblewrap', guard, ...(socat !== undefined && { socat }) });
    const s: SpawnSpec = {
      // With the guard, shaped as pi's spawn is (node, naming the guard's extension), so the sandbox
      // binds what it gives pi; node then runs the script.
      ...(guard
        ? { command: process.execPath, args: ['-e', RUN_SCRIPT, script, sb.piExtension] }
        : { command: '/bin/sh', args: ['-c', script] }),
      env: { PATH: '/usr/bin:/bin', ...o.env },
      cwd: d.workspace,
      files: [{ path: join(d.configDir, 'settings.json'), content: '{"hooks":"ours"}' }],
    };
    const w = await sb.prepare(s, { backend: guard ? 'pi' : 'claude', ...d, modelSocket });
    return new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(w.command, w.args, { cwd: w.cwd, env: w.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });
  }

  it('workspace and home are writable, and the writes land on the host', async () => {
    const r = await sh(`echo w > ${d.workspace}/a.txt && echo h > ${d.home}/b.txt && echo ok`);
    expect(r.out.trim()).toBe('ok');
    expect(readFileSync(join(d.workspace, 'a.txt'), 'utf8')).toBe('w\n');
    expect(readFileSync(join(d.home, 'b.txt'), 'utf8')).toBe('h\n');
  });
  it("another session's workspace and the host's home do not exist inside", async () => {
    const r = await sh(`cat ${other}/secret.txt; ls ${homedir()}; ls ${root}`);
    expect(r.out).not.toContain('OTHER-SESSION-SECRET');
    expect(r.out).toContain(`${other}/secret.txt: No such file or directory`);
    expect(r.out).toContain(`${homedir()}': No such file or directory`);
    expect(
      r.out
        .split('\n')
        .filter((l) => /^(cfg|home|ws)$/.test(l))
        .sort(),
    ).toEqual(['cfg', 'home', 'ws']);
    expect(r.out).not.toMatch(/^other-session$/m);
  });
  it('the rest is read-only, /tmp is private, the config files are read-only over a writable dir', async () => {
    const r = await sh(
      `touch /usr/x; touch ${d.configDir}/settings.json; echo t > /tmp/t && cat /tmp/t; touch ${d.configDir}/other.txt && echo cfg-ok`,
    );
    expect(r.out).toContain("touch: cannot touch '/usr/x': Read-only file system");
    expect(r.out).toContain(`touch: cannot touch '${d.configDir}/settings.json': Read-only file system`);
    expect(r.out).toContain('t\ncfg-ok');
    expect(existsSync('/tmp/t') && readFileSync('/tmp/t', 'utf8') === 't\n').toBe(false);
  });
  it('own PID namespace: the runner is not there to read; no capabilities; no secrets in /etc', async () => {
    const r = await sh(
      `ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo; cat /proc/${process.pid}/environ; grep CapEff /proc/self/status; cat /etc/shadow`,
    );
    const pids = (r.out.split('\n')[0] ?? '').trim().split(' ').map(Number);
    expect(pids.every((p) => p < 100)).toBe(true);
    expect(r.out).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.out).toContain('/etc/shadow: No such file or directory');
    if (process.pid > 100) expect(r.out).toContain(`/proc/${process.pid}/environ: No such file or directory`);
  });
  // With the guard on, Node's install and the guard's preload are bound in, as for a CLI.
  it("/etc/localtime is a symlink to the host's zone file, as on the host, and Node reads the host's zone from it", async () => {
    const host = realpathSync('/etc/localtime');
    expect(host.startsWith('/usr/share/zoneinfo/'), `this host's /etc/localtime is ${host}`).toBe(true);
    const r = await sh(
      `readlink /etc/localtime; ${process.execPath} -e 'console.log(Intl.DateTimeFormat().resolvedOptions().timeZone)'`,
      { guard: true },
    );
    expect(r.out.trim().split('\n')).toEqual([host, Intl.DateTimeFormat().resolvedOptions().timeZone]);
  });
  it("the guard's TypeScript is served from the strip cache inside too: Node's stripper is never loaded", async () => {
    const guard = new Sandbox({ mode: 'bubblewrap' }).guardOption('pi');
    if (typeof guard !== 'object' || guard.preload === undefined) throw new Error('no guard preload');
    // Once outside, so the cache holds this checkout's guard whatever ran before.
    const load = `import(${JSON.stringify(guard.file)}).then(() => console.log("amaro=" + process.moduleLoadList.some((m) => m.includes("amaro"))))`;
    const outside = spawnSync(process.execPath, ['--import', guard.preload, '-e', load], { encoding: 'utf8' });
    expect(outside.stdout.trim(), outside.stderr).toMatch(/^amaro=(true|false)$/);
    const r = await sh(`${process.execPath} --import ${guard.preload} -e '${load}'`, { guard: true });
    expect(r.out.trim()).toBe('amaro=false');
  });
  it('the guard and the CLI install are visible read-only', async () => {
    const r = await sh(`test -r ${GUARD_DIR}/rules.ts && echo guard-visible; touch ${GUARD_DIR}/x`, { guard: true });
    expect(r.out).toContain('guard-visible');
    expect(r.out).toContain('Read-only file system');
  });
  it("Node's compile cache given to the CLI is visible and read-only: the CLI cannot plant compiled code in it", async () => {
    const cache = join(root, 'cli-compile-cache');
    mkdirSync(join(cache, 'v22-tag'), { recursive: true });
    writeFileSync(join(cache, 'v22-tag', 'entry'), 'COMPILED');
    const r = await sh(
      'cat "$NODE_COMPILE_CACHE/v22-tag/entry"; echo; touch "$NODE_COMPILE_CACHE/v22-tag/entry" "$NODE_COMPILE_CACHE/planted"',
      { env: { NODE_COMPILE_CACHE: cache } },
    );
    expect(r.out).toContain('COMPILED\n');
    expect(r.out.match(/Read-only file system/g)).toHaveLength(2);
    expect(existsSync(join(cache, 'planted'))).toBe(false);
  });
  it("own network namespace: no host loopback service answers; the model URL reaches only the credential proxy's socket", async () => {
    const model = await startOfflineModel();
    const host = createServer((_req, res) => res.end('HOST-LOOPBACK-REACHED')).listen(0, '127.0.0.1');
    await new Promise((r) => host.once('listening', r));
    const port = (host.address() as AddressInfo).port;
    const route = await startModelRoute('bubblewrap', model.url, undefined);
    try {
      expect(route.baseUrl).toBe(MODEL_URL);
      const r = await sh(
        [
          `curl -s -m 5 http://127.0.0.1:${port}/; echo host=$?`,
          `curl -s -m 5 ${model.url}/_offline/requests; echo model=$?`,
          `curl -s -m 5 ${MODEL_URL}/; echo proxy=$?`,
          `curl -s -m 5 -H 'x-api-key: ${route.apiKey}' -H 'content-type: application/json' -d '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi from the sandbox"}]}' ${MODEL_URL}/v1/messages; echo; echo messages=$?`,
          'cat /proc/net/route | wc -l',
        ].join('; '),
        { modelSocket: route.socketPath },
      );
      expect(r.out).not.toContain('HOST-LOOPBACK-REACHED');
      expect(r.out).toContain('host=7');
      expect(r.out).toContain('model=7');
      expect(r.out).toContain('switchyard credential proxy\nproxy=0');
      expect(r.out).toContain('"text":"Offline model."');
      // Only the header line: not even a default route.
      expect(r.out.trim().split('\n').at(-1)).toBe('1');
      expect(model.requests().map((q) => q.path)).toEqual(['/v1/messages']);
    } finally {
      await route.close();
      host.close();
      await model.close();
    }
  });
  /** A model route whose upstream is never reached: these tests are about the way to the proxy. */
  async function withRoute<T>(use: (socket: string | undefined) => Promise<T>): Promise<T> {
    const route = await startModelRoute('bubblewrap', 'http://127.0.0.1:9', undefined);
    try {
      return await use(route.socketPath);
    } finally {
      await route.close();
    }
  }
  it('the model route listens before the CLI starts: a CLI whose first act is a model call reaches it', async () => {
    // A socat slow to start, as on a loaded host: the CLI must wait for it, not race it.
    const slowSocat = join(root, 'slow-socat');
    writeFileSync(slowSocat, '#!/bin/sh\nsleep 0.5\nexec /usr/bin/socat "$@"\n', { mode: 0o755 });
    const r = await withRoute((socket) =>
      sh(`exec curl -s -o /dev/null -w '%{http_code}' ${MODEL_URL}/`, { modelSocket: socket, socat: slowSocat }),
    );
    expect(r).toEqual({ code: 0, out: '200' });
  });
  it('a route that cannot start ends the CLI with a reason instead of waiting forever', async () => {
    const r = await withRoute((socket) => sh('echo the-cli-ran', { modelSocket: socket, socat: '/bin/false' }));
    expect(r).toEqual({ code: 1, out: 'switchyard: the model route (socat) did not start\n' });
  });
  it('no socat: the spawn is refused, naming it and the setup script', async () => {
    const missing = join(root, 'no-socat');
    const err = await withRoute((socket) => sh('true', { modelSocket: socket, socat: missing })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SandboxError);
    expect(err).toMatchObject({ code: 'sandbox_unavailable' });
    expect((err as Error).message).toContain(
      `socat (${missing}, the model route's relay) is not installed; run scripts/setup-system.sh`,
    );
  });
});
