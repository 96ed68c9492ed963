import { spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { DROP_TO_RUNNER } from './fixtures/image-uids.ts';

// runner/Dockerfile cannot be built here (no Docker engine). It is linted
// (dockerfile-utils, the validator behind the VS Code Docker extension),
// its promises are checked line by line, and the runner is run under the
// same layout, mimicked with bubblewrap as real root (no user namespace, so
// uids are real and /proc's ptrace checks are the kernel's own): the root
// read-only, only /workspace, /home/switchyard and /tmp writable, its own PID
// namespace, Docker's default capability set; PID 1 (bwrap, standing in for
// tini) is root and holds the task environment; the entrypoint's setpriv drops
// to the runner uid 10001 with CAP_SETUID, CAP_SETGID, CAP_KILL and
// CAP_DAC_OVERRIDE ambient; the
// runner (SWITCHYARD_SANDBOX=container, no bubblewrap inside) starts the CLI
// as uid 10002. Needs root: skipped otherwise.

const ENTRYPOINT = [
  '/usr/bin/tini',
  '--',
  '/usr/bin/setpriv',
  ...DROP_TO_RUNNER,
  'node',
  '/app/runner/dist/switchyard-runner.mjs',
];
/** Docker's (and Fargate's) default capability set for a container's root. */
const DOCKER_CAPS = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FSETID',
  'FOWNER',
  'MKNOD',
  'NET_RAW',
  'SETGID',
  'SETUID',
  'SETFCAP',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'SYS_CHROOT',
  'KILL',
  'AUDIT_WRITE',
];
const isRoot = process.getuid?.() === 0;

const runnerDir = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const dockerfile = readFileSync(join(runnerDir, 'Dockerfile'), 'utf8');
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
const all = (kw: string) => instructions.filter((l) => l.startsWith(`${kw} `));

describe('runner/Dockerfile', () => {
  it('lints clean, warnings included', () => {
    expect(validate(dockerfile).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });
  it('node 22 (>= 22.18, for type stripping), the same version as the dev toolchain', () => {
    const devNode = (
      JSON.parse(readFileSync(join(runnerDir, '..', 'package.json'), 'utf8')) as {
        devDependencies: Record<string, string>;
      }
    ).devDependencies.node;
    expect(dockerfile).toContain(`ARG NODE_IMAGE=node:${devNode}-bookworm-slim`);
    const [, minor] = (devNode ?? '').split('.').map(Number);
    expect(devNode?.startsWith('22.') && (minor ?? 0) >= 18).toBe(true);
  });
  it('pinned CLIs: exact versions, installed from the lockfile with npm ci', () => {
    const pkg = JSON.parse(readFileSync(join(runnerDir, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies['@anthropic-ai/claude-code']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.dependencies['@mariozechner/pi-coding-agent']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(all('RUN').some((l) => /npm ci --omit=dev/.test(l))).toBe(true);
    expect(all('RUN').some((l) => /--ignore-scripts/.test(l))).toBe(false);
  });
  it('runner and CLI non-root (tini alone is root), an init process, writable volumes only for workspace, home and tmp', () => {
    expect(all('USER')).toEqual([]);
    expect(all('ENTRYPOINT')).toEqual([`ENTRYPOINT ${JSON.stringify(ENTRYPOINT).replaceAll('","', '", "')}`]);
    expect(dockerfile).toMatch(/useradd --uid 10001 --gid 10001 .* switchyard/);
    expect(dockerfile).toMatch(/useradd --uid 10002 --gid 10001 .* switchyard-cli/);
    expect(dockerfile).toMatch(/apt-get install [^\n]*util-linux/);
    expect(all('VOLUME')).toEqual(['VOLUME ["/workspace", "/home/switchyard", "/tmp"]']);
    expect(dockerfile).toMatch(/SWITCHYARD_SANDBOX=container/);
    expect(dockerfile).toMatch(/SWITCHYARD_STATE_DIR=\/home\/switchyard\/state/);
  });
  it('strips the runner modules at build time, after copying them (no runner loads the stripper)', () => {
    const fill = instructions.indexOf('RUN node runner/bin/fill-strip-cache.js');
    expect(fill).toBeGreaterThan(instructions.indexOf('COPY runner/src ./runner/src'));
    expect(fill).toBeGreaterThan(instructions.indexOf('COPY protocol/src ./protocol/src'));
    expect(fill).toBeGreaterThan(instructions.indexOf('COPY offline-model/src ./offline-model/src'));
  });
  it('runs the runner bundled at build time, from the sources it copied (runner/scripts/build-bundle.ts)', () => {
    const bundleStage = instructions.indexOf('FROM deps AS bundle');
    const build = instructions.indexOf('RUN node runner/scripts/build-bundle.ts');
    expect(bundleStage).toBeGreaterThan(-1);
    expect(build).toBeGreaterThan(instructions.indexOf('COPY runner/src ./runner/src', bundleStage));
    expect(build).toBeGreaterThan(instructions.indexOf('COPY protocol/src ./protocol/src', bundleStage));
    expect(instructions).toContain('COPY --from=bundle /app/runner/dist ./runner/dist');
  });
  it('copies the application only (no tests, no local state), owned by root', () => {
    const copies = all('COPY').map((l) => l.split(/\s+/).slice(1, -1).join(' '));
    expect(copies.every((c) => !/test|\.switchyard|\.env|\.wrangler/.test(c))).toBe(true);
    expect(all('COPY').some((l) => l.includes('--chown'))).toBe(false);
  });
});

// ---------------------------------------------------------------------------

let model: OfflineModel;
const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-container-')));
const installRoot = realpathSync(join(runnerDir, '..'));
beforeAll(async () => {
  model = await startOfflineModel();
});
afterAll(async () => {
  await model.close();
  rmSync(root, { recursive: true, force: true });
});

const SECRET = 'sk-ant-CANARY-container-key';
const TOKEN = 'CANARY-runner-token';

/** `switchyard-runner once` inside a bubblewrap mimic of the container. */
function onceInContainer(
  backend: 'claude' | 'pi',
  prompt: string,
  extraBinds: string[] = [],
): Promise<{ code: number | null; json: Record<string, unknown>; stderr: string }> {
  const dir = mkdtempSync(join(root, `${backend}-`));
  const ws = join(dir, 'workspace');
  const home = join(dir, 'home');
  mkdirSync(ws, { mode: 0o700 });
  mkdirSync(home, { mode: 0o700 });
  // The image: both volumes owned by the runner user.
  chownSync(ws, 10001, 10001);
  chownSync(home, 10001, 10001);
  // The image's root, read-only: every top-level entry of this host but its homes, then the volumes.
  const system = readdirSync('/').filter(
    (e) => !['proc', 'dev', 'tmp', 'sys', 'home', 'root', 'workspace'].includes(e),
  );
  const args = [
    ...system.flatMap((e) => {
      const p = `/${e}`;
      const st = lstatSync(p);
      return st.isSymbolicLink() ? ['--symlink', readlinkSync(p), p] : ['--ro-bind', p, p];
    }),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
    '--bind',
    ws,
    '/workspace',
    '--bind',
    home,
    '/home/switchyard',
    // The image holds the runner install; here it is this checkout, which may itself live
    // under /tmp or /home (CI clones anywhere), so bind it back over the volumes.
    '--ro-bind',
    installRoot,
    installRoot,
    ...extraBinds,
    '--remount-ro',
    '/',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--cap-drop',
    'ALL',
    ...DOCKER_CAPS.flatMap((c) => ['--cap-add', `CAP_${c}`]),
    '--die-with-parent',
    '--chdir',
    '/workspace',
    '--',
    '/usr/bin/setpriv',
    ...DROP_TO_RUNNER,
    process.execPath,
    join(runnerDir, 'bin', 'switchyard-runner.js'),
    'once',
    '--backend',
    backend,
    '--prompt',
    prompt,
  ];
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/home/switchyard',
    TMPDIR: '/tmp',
    SWITCHYARD_SANDBOX: 'container',
    SWITCHYARD_WORKSPACE: '/workspace',
    SWITCHYARD_MODEL_URL: model.url,
    ANTHROPIC_API_KEY: SECRET,
    SWITCHYARD_RUNNER_TOKEN: TOKEN,
  };
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/bwrap', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, json: JSON.parse(stdout.trim().split('\n')[0] ?? '') as Record<string, unknown>, stderr });
      } catch {
        reject(new Error(`no JSON on stdout: ${stdout} ${stderr}`));
      }
    });
  });
}

const probeScript = [
  'id -u',
  'touch /usr/x /x 2>&1 | sed "s/.*: //"',
  'echo ws > /workspace/w.txt && cat /workspace/w.txt',
  'echo home > $HOME/h.txt && cat $HOME/h.txt',
  'echo tmp > /tmp/t.txt && cat /tmp/t.txt',
  'echo env-secrets=$(env | grep -c CANARY)',
  'echo runner-environ-secrets=$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c CANARY)',
  'echo uids=$(cat /proc/[0-9]*/status 2>/dev/null | awk \'/^Uid:/{print $2}\' | sort -un | tr "\\n" " ")',
].join('; ');

describe.skipIf(!isRoot).each(['claude', 'pi'] as const)('%s: the runner under the container layout', (backend) => {
  it('the CLI runs as uid 10002, the runner as 10001, only PID 1 as root; only workspace, home and tmp are writable; the guard is loaded; no secret in the CLI environment', async () => {
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'shell', command: probeScript })}`);
    expect(r.code, `${JSON.stringify(r.json)} ${r.stderr}`).toBe(0);
    const text = String(r.json.text);
    expect(text).toMatch(/^Tool result: 10002\n/);
    expect(text).toMatch(/^uids=0 10001 10002 ?$/m);
    expect(text).toContain('Read-only file system');
    expect(text).toContain('\nws\nhome\ntmp\n');
    expect(text).toContain('env-secrets=0');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(TOKEN);
  });

  it('the guard refuses a read outside /workspace', async () => {
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'read', path: '/etc/hostname' })}`);
    expect(String(r.json.text)).toMatch(
      /^Tool result \(error\): .*switchyard guard: .*outside the session workspace \/workspace/s,
    );
  });

  // The runner answers claude's hooks and can read through any directory (CAP_DAC_OVERRIDE); the
  // CLI cannot. An agent probing a directory closed to it must learn nothing from the refusal:
  // neither where a link in it points nor whether an entry exists.
  it.runIf(backend === 'claude')("the guard's refusal says nothing of what only the runner can see", async () => {
    const closed = mkdtempSync(join(root, 'closed-'));
    symlinkSync('/etc/switchyard-hidden-target', join(closed, 'link'));
    writeFileSync(join(closed, 'token.txt'), 'x');
    chmodSync(closed, 0o700); // root's, like /root
    const texts: string[] = [];
    for (const path of ['/closed/link/x', '/closed/token.txt/x', '/closed/nothing/x']) {
      const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'read', path })}`, [
        '--ro-bind',
        closed,
        '/closed',
      ]);
      texts.push(String(r.json.text));
    }
    const [link, file, missing] = texts;
    expect(link).toMatch(/^Tool result \(error\): .*switchyard guard: .*cannot check \/closed\/link: EACCES/s);
    expect(link).not.toContain('hidden-target');
    expect(file).toMatch(/cannot check \/closed\/token\.txt: EACCES/);
    expect(missing).toMatch(/cannot check \/closed\/nothing: EACCES/);
  });

  // Was the KNOWN GAP (DESIGN "Sandbox" → "Production uid separation"): the CLI ran as the
  // runner's uid and could read the runner's and tini's /proc/<pid>/environ.
  // Now it is another uid without capabilities, so the kernel refuses
  // (ptrace-read access). Both are there to be named, and both are refused.
  it('a shell in the container cannot read the runner or PID 1 environment', async () => {
    const script = [
      'for f in /proc/[0-9]*/environ; do p=${f#/proc/}; p=${p%/environ}; u=$(awk \'/^Uid:/{print $2}\' /proc/$p/status 2>/dev/null); if cat $f >/dev/null 2>&1; then echo "readable uid=$u"; else echo "denied uid=$u"; fi; done | sort | uniq -c',
      'echo canary=$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c CANARY)',
    ].join('; ');
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'shell', command: script })}`);
    expect(r.code, `${JSON.stringify(r.json)} ${r.stderr}`).toBe(0);
    const text = String(r.json.text);
    expect(text).toContain('canary=0');
    expect(text).toMatch(/\d+ denied uid=0\n/);
    expect(text).toMatch(/\d+ denied uid=10001\n/);
    expect(text).not.toMatch(/readable uid=(0|10001)\n/);
    expect(text).toMatch(/\d+ readable uid=10002\n/);
  });
});
