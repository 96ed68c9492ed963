import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTAINER_NAME, VOLUMES } from '../../infra/src/runner-container.ts';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { CLI_UID, wrapWithUidDrop } from '../../runner/src/sandbox/uid-drop.ts';
import { type BuiltImage, CLI_GID, cliInImage, openImage, REPO } from './image-run.ts';

// runner/Dockerfile, really built (scripts/image/build.sh: buildah on a local Debian + Node 22
// base) and really run as the ECS task definition in infra/ runs it (./image-run.ts): the image's
// own ENTRYPOINT (tini → setpriv → switchyard-runner) with a command override, and the image's
// environment plus what the task definition adds (the model key as a secret; here the offline
// model's URL).
//
// Needs root, bubblewrap, buildah and mmdebstrap (the build script installs the last two).
// Skipped without root outside CI; under CI it must run.

const isRoot = process.getuid?.() === 0;
const canRun = isRoot;
if (!canRun && process.env.CI) throw new Error('the runner image test needs root under CI');

let built: BuiltImage | undefined;
let model: OfflineModel;

beforeAll(async () => {
  if (!canRun) return;
  // Cached: a no-op rebuild when nothing the image copies changed (CI builds it in an earlier step).
  built = openImage();
  model = await startOfflineModel();
}, 20 * 60_000);

afterAll(async () => {
  await model?.close();
  built?.close();
});

/** The built image; only inside the suite that runs when it could be built. */
const img = (): BuiltImage => {
  if (built === undefined) throw new Error('the image was not built');
  return built;
};

const MODEL_KEY = 'sk-ant-image-test-key';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs the image's entrypoint with `command` as the ECS command override (or `command` alone, with
 * `entrypoint: false`), `extraEnv` added to the task's environment; resolves at exit.
 */
function runImage(command: string[], extraEnv: Record<string, string> = {}, entrypoint = true): Promise<Run> {
  const volumes = img().taskVolumes();
  const args = img().bwrapArgs(volumes, command, {
    env: { SWITCHYARD_MODEL_URL: model.url, ANTHROPIC_API_KEY: MODEL_KEY, ...extraEnv },
    entrypoint,
  });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', args, { stdio: ['ignore', 'pipe', 'pipe'], env: {} });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      volumes.remove();
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

const json = (r: Run) => {
  try {
    return JSON.parse(r.stdout.trim().split('\n')[0] ?? '') as Record<string, unknown>;
  } catch {
    throw new Error(`exit ${r.code}, no JSON on stdout: ${r.stdout}\n${r.stderr}`);
  }
};

describe('runner/Dockerfile', () => {
  it('pins every Debian package it installs to an exact version', () => {
    const dockerfile = readFileSync(join(REPO, 'runner/Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const installs = [...dockerfile.matchAll(/apt-get install ([^&\n]+)/g)].map((m) =>
      m[1]!
        .trim()
        .split(/\s+/)
        .filter((w) => !w.startsWith('-')),
    );
    expect(installs.length).toBeGreaterThan(0);
    for (const pkgs of installs) {
      expect(pkgs.length).toBeGreaterThan(0);
      for (const p of pkgs) expect(p, p).toMatch(/^[a-z0-9.+-]+=[0-9][A-Za-z0-9.+~:-]*$/);
    }
  });
});

describe.skipIf(!canRun)('runner image, built and run', () => {
  it('the image as the task definition expects it: tini → setpriv → runner, no USER, serve by default, the three volumes', () => {
    const { config, image } = img();
    expect(config.Entrypoint.slice(0, 3)).toEqual(['/usr/bin/tini', '--', '/usr/bin/setpriv']);
    expect(config.Entrypoint.slice(-2)).toEqual(['node', '/app/runner/dist/switchyard-runner.mjs']);
    expect(config.Cmd).toEqual(['serve']);
    expect(config.User ?? '').toBe('');
    expect(Object.keys(config.Volumes).sort()).toEqual(VOLUMES.map((v) => v.containerPath).sort());
    expect(config.Env).toContain('SWITCHYARD_SANDBOX=container');
    expect(CONTAINER_NAME).toBe('runner');
    const size = img().buildah('images', '--format', '{{.Size}}', image);
    console.log(`runner image ${image}: ${size}`);
  });

  it('host mode is not in the image: the bundle leaves the local runner host out and says so', async () => {
    const r = await runImage(['host']);
    expect(r.stderr).toContain('host mode is not in this install');
    expect(r.code).toBe(2);
  });

  it('serve loads its modules from the compile cache the image was built with: every one read is accepted', async () => {
    // serve with no session configured loads what it needs before a CLI's spawn, then refuses
    // (exit 2). Node says, per module, whether its cache was found and accepted: a cache filled
    // under another uid or other V8 flags, or unreadable to the runner, is never read or accepted.
    const r = await runImage(['serve'], { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
    expect(r.stderr).toContain('"invalid configuration"');
    expect(r.code).toBe(2);
    const read = [...r.stderr.matchAll(/reading cache from \S+ for ESM (\S+?)\.\.\./g)].map((m) => m[1]);
    const accepted = [...r.stderr.matchAll(/cache for (\S+) was accepted/g)].map((m) => m[1]);
    expect(read).toContainEqual(expect.stringMatching(/^file:\/\/\/app\/runner\/dist\/lifecycle-\w+\.mjs$/));
    expect(accepted.sort()).toEqual(read.sort());
  });

  it("pi reads the compile cache the image was built with, as the CLI's uid: its modules' code accepted, none rejected", async () => {
    // pi as the runner starts it in a task: the CLI's uid and group, the cache the runner hands it
    // (SWITCHYARD_CLI_COMPILE_CACHE → NODE_COMPILE_CACHE). Asked for its version, it loads its
    // whole module graph first. A cache filled under another uid or other V8 flags, or unreadable
    // to the CLI, is never read or accepted.
    const cache = img().env.SWITCHYARD_CLI_COMPILE_CACHE;
    expect(cache).toBe('/app/cli-compile-cache');
    const pi = cliInImage('pi');
    const spec = wrapWithUidDrop(
      { command: pi.command, args: [...pi.prefixArgs, '--version'], env: {}, cwd: '/tmp', files: [] },
      { setpriv: '/usr/bin/setpriv', uid: CLI_UID, gid: CLI_GID },
    );
    const r = await runImage(
      [spec.command, ...spec.args],
      { NODE_COMPILE_CACHE: cache ?? '', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
      false,
    );
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    // Node's debug lines come from more than one thread and may interleave: counted, not paired.
    const accepted = [...r.stderr.matchAll(/cache for (\S+) was accepted/g)].map((m) => m[1]);
    expect(accepted).toContain(`file://${pi.prefixArgs[0]}`);
    expect(accepted.length).toBeGreaterThan(100);
    expect(r.stderr).not.toContain('was rejected');
  });

  for (const backend of ['pi', 'claude'] as const) {
    it(`probe --backend ${backend} passes inside the image (container sandbox, guard loaded)`, async () => {
      const r = await runImage(['probe', '--backend', backend]);
      const report = json(r) as {
        ok: boolean;
        backends: { backend: string; usable: boolean; sandbox: string; guard: string; problems: string[] }[];
      };
      expect(report.backends).toEqual([
        expect.objectContaining({ backend, usable: true, sandbox: 'container', guard: 'loaded', problems: [] }),
      ]);
      expect(report.ok).toBe(true);
      expect(r.code).toBe(0);
      console.log(`probe --backend ${backend} in the image: ${r.ms.toFixed(0)} ms`);
    });

    it(`a once turn with ${backend} against the offline model succeeds inside the image`, async () => {
      const before = model.requests().length;
      const prompt = `hello from the ${backend} image test`;
      const r = await runImage(['once', '--backend', backend, '--prompt', prompt]);
      const result = json(r);
      expect(result).toMatchObject({ ok: true, stopReason: 'end_turn' });
      expect(String(result.text)).toContain(prompt);
      expect(r.code).toBe(0);
      // The CLI's request went through the runner's credential proxy: the model saw the real key.
      const seen = model.requests().slice(before);
      expect(seen.length).toBeGreaterThan(0);
      expect(JSON.stringify(seen.map((q) => q.headers))).toContain(MODEL_KEY);
      console.log(
        `once --backend ${backend} in the image (cold: process start → answer → exit): ${r.ms.toFixed(0)} ms`,
      );
    });
  }
});
