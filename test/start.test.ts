// `npm start` as a person runs it: the real command, real wrangler dev / runner host / offline
// model processes; ready when /healthz answers; Ctrl-C (SIGINT to the foreground process group,
// as a terminal sends it) must leave no process behind — not the services, not the runners.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DescribeTasksCommand, ECSClient } from '@aws-sdk/client-ecs';
import { afterAll, describe, expect, it } from 'vitest';
import { hostFetch, descendants, listProcs, liveInGroups, reapStaleTasks } from '@switchyard/runner/host';
import { reapStaleServices } from '../scripts/lib/services.ts';
import { freePort, startStack } from '../scripts/start.ts';
import { until } from './helpers/poll.ts';

const ROOT = resolve(import.meta.dirname, '..');
const dirs: string[] = [];
const tempDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `switchyard-start-${name}-`));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function healthy(url: string): Promise<true | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
    return res.ok ? true : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the runner answering a session's message: its task ref from the session, described through the launch broker with the edge's key (the edge's own way to the host).
 */
async function runnerPid(
  url: string,
  token: string,
  brokerUrl: string,
  edgeKey: { accessKeyId: string; secretAccessKey: string },
): Promise<number> {
  const auth = { authorization: `Bearer ${token}` };
  const created = await fetch(`${url}/api/sessions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{}',
  });
  const { id } = (await created.json()) as { id: string };
  const sent = await fetch(`${url}/api/sessions/${id}/messages`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'hello' }),
  });
  expect(sent.status, await sent.clone().text()).toBe(202);
  const ref = await until(
    'the session’s runner to be connected',
    async () => {
      const res = await fetch(`${url}/api/sessions/${id}`, { headers: auth });
      const { runner } = (await res.json()) as { runner: { ref: string | null; connected: boolean } | null };
      return runner?.connected === true && runner.ref !== null ? runner.ref : undefined;
    },
    60_000,
  );
  const ecs = new ECSClient({ region: 'us-east-1', endpoint: brokerUrl, credentials: edgeKey, maxAttempts: 1 });
  const task = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [ref] }))).tasks?.[0];
  return Number(task?.containers?.[0]?.runtimeId?.split('-').at(-1));
}

describe('npm start', () => {
  it('comes up on loopback, prints the URL and where the credentials are, and Ctrl-C leaves nothing behind', async () => {
    const port = await freePort();
    const devDir = tempDir('dev');
    const persistTo = tempDir('state');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      SWITCHYARD_DEV_DIR: devDir,
      SWITCHYARD_PERSIST_TO: persistTo,
      // Serve one bundle: edits others make to edge/src meanwhile must not restart the Worker mid-test.
      SWITCHYARD_FROZEN_EDGE: '1',
    };
    delete env.ANTHROPIC_API_KEY;
    delete env.SWITCHYARD_MODEL_URL;
    delete env.SWITCHYARD_ADMIN_PASSWORD;
    // Its own process group, like a terminal's foreground job: SIGINT to the group = Ctrl-C.
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    npm.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    npm.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      npm.once('exit', (code, signal) => r({ code, signal })),
    );
    let groups: Set<number> = new Set();
    try {
      const url = `http://127.0.0.1:${port}`;
      await until('the edge to answer /healthz', () => healthy(url), 180_000);
      await until('the banner', () => (stdout.includes('Ctrl-C stops everything') ? true : undefined), 30_000);
      expect(stdout).toContain(`Switchyard is up: ${url}`);
      const credentials = join(devDir, 'dev-admin.json');
      expect(stdout).toContain(`admin login: admin — the password is in ${credentials} (mode 0600; not printed)`);
      expect(statSync(credentials).mode & 0o777).toBe(0o600);
      const { username, password } = JSON.parse(readFileSync(credentials, 'utf8')) as {
        username: string;
        password: string;
      };
      expect(stdout + stderr).not.toContain(password);

      // The admin can log in: migrations applied, account created, edge serving.
      const login = await fetch(`${url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password }),
      });
      expect(login.status).toBe(200);
      const { token } = (await login.json()) as { token: string };

      // The backend switch probes pi through the edge's launcher → the runner host → `switchyard-runner probe`.
      const toPi = await fetch(`${url}/api/admin/settings`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ llmBackend: 'pi' }),
      });
      expect(toPi.status, await toPi.clone().text()).toBe(200);
      expect(((await toPi.json()) as { llmBackend: string }).llmBackend).toBe('pi');
      const settings = (await (
        await fetch(`${url}/api/settings`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as {
        backends: { name: string; available: boolean; version?: string }[];
      };
      expect(settings.backends.find((b) => b.name === 'pi')).toMatchObject({ available: true, version: '0.73.1' });

      // The runner host is up with the offline model wired in, behind its launch broker.
      const [, hostUrl, brokerUrl] =
        /local runner host (http:\/\/127\.0\.0\.1:\d+) behind the launch broker (http:\/\/127\.0\.0\.1:\d+)/.exec(
          stdout,
        ) ?? [];
      expect(hostUrl && brokerUrl).toBeTruthy();
      // The edge's key, which the edge got through its env file, is the broker's key only.
      const edgeEnv = Object.fromEntries(
        readFileSync(join(devDir, 'edge.env'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      const edgeKey = {
        accessKeyId: edgeEnv.AWS_ACCESS_KEY_ID as string,
        secretAccessKey: edgeEnv.AWS_SECRET_ACCESS_KEY as string,
      };
      const probePi = (at: string) =>
        hostFetch(at, '/switchyard/probe', edgeKey, { method: 'POST', body: JSON.stringify({ backend: 'pi' }) });
      expect(
        (await fetch(`${brokerUrl}/switchyard/probe`, { method: 'POST', body: JSON.stringify({ backend: 'pi' }) }))
          .status,
      ).toBe(403);
      // Straight to the host, the edge's key opens nothing: only the broker holds the host's key.
      expect((await probePi(hostUrl as string)).status).toBe(403);
      const probe = (await (await probePi(brokerUrl as string)).json()) as {
        exitCode: number;
        report: { backends: { usable: boolean; credentials: { source: string } }[] };
      };
      expect(probe.exitCode).toBe(0);
      expect(probe.report.backends[0]?.credentials.source).toBe('model_url');

      // A live runner under the host, so Ctrl-C has a runner to stop too.
      const pid = await runnerPid(url, token, brokerUrl as string, edgeKey);
      const procs = listProcs();
      groups = new Set(descendants(npm.pid as number, procs).map((p) => p.pgid));
      expect(groups.has(pid)).toBe(true);
      // npm/start, wrangler (+ workerd), the runner host, the offline model, the runner.
      expect(groups.size).toBeGreaterThanOrEqual(5);

      process.kill(-(npm.pid as number), 'SIGINT');
      const exit = await until('npm start to exit', () => exited, 90_000);
      // start.ts exits 0; npm itself, having been sent SIGINT too, re-raises it once its child is done.
      expect([
        { code: 0, signal: null },
        { code: null, signal: 'SIGINT' },
      ]).toContainEqual(exit);
      expect(stderr).toContain('SIGINT: stopping the runner host');
      expect(stderr).toContain('all stopped');
      // Everything that was below npm start is gone, in every process group it used.
      await until('no process left', () => (liveInGroups(groups).length === 0 ? true : undefined), 10_000);
      expect(liveInGroups(groups)).toEqual([]);
      expect(await healthy(url)).toBeUndefined();
    } catch (err) {
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}\n--- npm start stdout:\n${stdout}\n--- stderr:\n${stderr.slice(-4000)}`,
      );
    } finally {
      // On failure: Ctrl-C first (an orderly stop), then force, then what the records name.
      if (npm.exitCode === null && npm.signalCode === null) {
        try {
          process.kill(-(npm.pid as number), 'SIGINT');
          await until('npm start to stop', () => exited, 60_000).catch(() => undefined);
        } catch {
          // already gone
        }
      }
      for (const pgid of [npm.pid as number, ...groups]) {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      reapStaleServices(join(devDir, 'services.json'));
      reapStaleTasks(join(devDir, 'host'));
    }
  }, 300_000);

  it('startStack(): SWITCHYARD_ADMIN_PASSWORD is used and never written down; stop() ends every service', async () => {
    const password = 'correct-horse-battery-staple';
    const lines: string[] = [];
    const stack = await startStack({
      port: 0,
      frozenEdge: true,
      devDir: tempDir('dev'),
      persistTo: tempDir('state'),
      env: { ...process.env, SWITCHYARD_ADMIN_PASSWORD: password, ANTHROPIC_API_KEY: '', SWITCHYARD_MODEL_URL: '' },
      output: (name, _s, line) => lines.push(`[${name}] ${line}`),
      log: (line) => lines.push(line),
    });
    let groups = new Set<number>();
    try {
      expect(stack.admin).toEqual({ username: 'admin', password, source: 'env' });
      expect(stack.offlineModelUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stack.hubUrl).toBe(`ws://127.0.0.1:${stack.port}/internal/runner/connect`);
      const login = await fetch(`${stack.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password }),
      });
      expect(login.status).toBe(200);
      expect(lines.join('\n')).not.toContain(password);
      expect(readFileSync(join(stack.devDir, 'edge.env'), 'utf8')).not.toContain(password);
      for (const s of stack.services) s.sample();
      groups = new Set(stack.services.flatMap((s) => [...s.groups]));
      expect(stack.services.map((s) => s.name).sort()).toEqual(['edge', 'host', 'model']);
      expect(await stack.runners()).toEqual([]);
    } finally {
      await stack.stop();
    }
    expect(liveInGroups(groups)).toEqual([]);
  }, 300_000);
});
