import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOfflineModel, type OfflineModel } from '../src/offline-model/index.ts';

// runner/Dockerfile cannot be built here (no Docker engine). It is linted
// (dockerfile-utils, the validator behind the VS Code Docker extension),
// its promises are checked line by line, and the runner is run under the
// same layout, mimicked with bubblewrap: the root read-only, a non-root uid,
// only /workspace, /home/switchyard and /tmp writable, its own PID namespace,
// SWITCHYARD_SANDBOX=container (no bubblewrap inside).

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
    const devNode = (JSON.parse(readFileSync(join(runnerDir, '..', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies.node;
    expect(dockerfile).toContain(`ARG NODE_IMAGE=node:${devNode}-bookworm-slim`);
    const [, minor] = (devNode ?? '').split('.').map(Number);
    expect(devNode?.startsWith('22.') && (minor ?? 0) >= 18).toBe(true);
  });
  it('pinned CLIs: exact versions, installed from the lockfile with npm ci', () => {
    const pkg = JSON.parse(readFileSync(join(runnerDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies['@anthropic-ai/claude-code']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.dependencies['@mariozechner/pi-coding-agent']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(all('RUN').some((l) => /npm ci --omit=dev/.test(l))).toBe(true);
    expect(all('RUN').some((l) => /--ignore-scripts/.test(l))).toBe(false);
  });
  it('a non-root user, an init process, writable volumes only for workspace, home and tmp', () => {
    expect(all('USER')).toEqual(['USER 10001:10001']);
    expect(all('ENTRYPOINT')).toEqual(['ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/runner/bin/switchyard-runner.js"]']);
    expect(all('VOLUME')).toEqual(['VOLUME ["/workspace", "/home/switchyard", "/tmp"]']);
    expect(dockerfile).toMatch(/SWITCHYARD_SANDBOX=container/);
    expect(dockerfile).toMatch(/SWITCHYARD_STATE_DIR=\/home\/switchyard\/state/);
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
function onceInContainer(backend: 'claude' | 'pi', prompt: string): Promise<{ code: number | null; json: Record<string, unknown>; stderr: string }> {
  const dir = mkdtempSync(join(root, `${backend}-`));
  const ws = join(dir, 'workspace');
  const home = join(dir, 'home');
  mkdirSync(ws);
  mkdirSync(home);
  // The image's root, read-only: every top-level entry of this host but its homes, then the volumes.
  const system = readdirSync('/').filter((e) => !['proc', 'dev', 'tmp', 'sys', 'home', 'root', 'workspace'].includes(e));
  const args = [
    ...system.flatMap((e) => {
      const p = `/${e}`;
      const st = lstatSync(p);
      return st.isSymbolicLink() ? ['--symlink', readlinkSync(p), p] : ['--ro-bind', p, p];
    }),
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    '--bind', ws, '/workspace',
    '--bind', home, '/home/switchyard',
    // The image holds the runner install; here it is this checkout, which may itself live
    // under /tmp or /home (CI clones anywhere), so bind it back over the volumes.
    '--ro-bind', installRoot, installRoot,
    '--remount-ro', '/',
    '--unshare-user', '--uid', '10001', '--gid', '10001',
    '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--cap-drop', 'ALL',
    '--die-with-parent',
    '--chdir', '/workspace',
    '--', process.execPath, join(runnerDir, 'bin', 'switchyard-runner.js'), 'once', '--backend', backend, '--prompt', prompt,
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
].join('; ');

describe.each(['claude', 'pi'] as const)('%s: the runner under the container layout', (backend) => {
  it('runs as the non-root user; only workspace, home and tmp are writable; the guard is loaded; no secret in the CLI environment', async () => {
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'shell', command: probeScript })}`);
    expect(r.code, r.stderr).toBe(0);
    const text = String(r.json.text);
    expect(text).toMatch(/^Tool result: 10001\n/);
    expect(text).toContain('Read-only file system');
    expect(text).toContain('\nws\nhome\ntmp\n');
    expect(text).toContain('env-secrets=0');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(TOKEN);
  });

  it('the guard refuses a read outside /workspace', async () => {
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'read', path: '/etc/hostname' })}`);
    expect(String(r.json.text)).toMatch(/^Tool result \(error\): .*switchyard guard: .*outside the session workspace \/workspace/s);
  });

  // KNOWN GAP (DESIGN "Sandbox" → "Production gap"): in the container the CLI
  // runs as the runner's uid in the runner's PID namespace, so it can read the
  // runner's (and tini's) /proc/<pid>/environ. Locally bubblewrap's PID
  // namespace closes this (test/escape: shell-proc-scan). When the container
  // runs the CLI under its own uid, flip this test.
  it('KNOWN GAP: a shell in the container can read the runner process environment', async () => {
    const r = await onceInContainer(backend, `#offline ${JSON.stringify({ tool: 'shell', command: 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c CANARY' })}`);
    expect(Number(/Tool result: (\d+)/.exec(String(r.json.text))?.[1])).toBeGreaterThan(0);
  });
});
