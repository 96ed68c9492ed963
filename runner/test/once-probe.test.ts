import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { locateCli } from '../src/cli/locate.ts';
import { tempDir } from './contract/fixture.ts';
import { assertNoOrphans, RUNNER_BIN } from './contract/runner-process.ts';

const FAKE_CLI = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures', 'fake-cli.ts');

interface Run {
  code: number | null;
  json: Record<string, unknown>;
  stdout: string;
}

/** Runs the runner CLI to completion with a minimal environment; stdout must be exactly one JSON line. */
function run(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUNNER_BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = stdout.trim().split('\n');
      try {
        resolve({ code, json: JSON.parse(lines[0] ?? '') as Record<string, unknown>, stdout });
      } catch {
        reject(new Error(`stdout is not one JSON object: ${stdout}`));
      }
    });
  });
}

describe('once', () => {
  let model: OfflineModel;
  beforeAll(async () => {
    model = await startOfflineModel();
  });
  afterAll(async () => model.close());
  afterEach(() => assertNoOrphans());

  test.each(['claude', 'pi'])('%s: success JSON, exit 0', async (backend) => {
    const r = await run(
      ['once', '--backend', backend, '--prompt', `say hi ${backend}`, '--workspace', tempDir('sy-once-')],
      { SWITCHYARD_MODEL_URL: model.url },
    );
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.json).toMatchObject({
      ok: true,
      text: `Offline model reply to: say hi ${backend}`,
      stopReason: 'end_turn',
      usage: { inputTokens: expect.any(Number) },
    });
    expect(r.json.error).toBeUndefined();
  });

  test("pi's Node compiles into the compile cache the runner is given (SWITCHYARD_CLI_COMPILE_CACHE)", async () => {
    // Writable here (no sandbox), so what pi's Node did with it shows: Node files the entries under
    // a directory named for its version, V8's flags and the uid, and writes them as pi exits.
    const cache = tempDir('sy-cli-cache-');
    const r = await run(['once', '--backend', 'pi', '--prompt', 'compile', '--workspace', tempDir('sy-once-')], {
      SWITCHYARD_MODEL_URL: model.url,
      SWITCHYARD_SANDBOX: 'none',
      SWITCHYARD_CLI_COMPILE_CACHE: cache,
    });
    expect(r.json).toMatchObject({ ok: true });
    const tags = readdirSync(cache);
    expect(tags).toEqual([
      expect.stringMatching(new RegExp(`^${process.version}-${process.arch}-\\w+-${process.getuid?.()}$`)),
    ]);
    expect(readdirSync(join(cache, tags[0] ?? '')).length).toBeGreaterThan(100);
  });

  // Each provider error class through `once` (sandbox, model proxy, real CLI). The CLIs'
  // default retry settings apply to the classes retrying cannot fix: claude alone would
  // retry a 401 ten times over minutes; the model's request count shows it did not.
  const fatal = [
    { status: 401, code: 'provider_auth' },
    { status: 403, code: 'provider_auth' },
    { status: 402, code: 'provider_billing' },
    { status: 400, code: 'provider_invalid_request' },
  ];
  test.each(['claude', 'pi'].flatMap((backend) => fatal.map((f) => ({ backend, ...f }))))(
    '$backend: provider $status is ok:false with $code, not retryable, after one request; exit 1',
    async ({ backend, status, code }) => {
      model.reset();
      const r = await run(
        [
          'once',
          '--backend',
          backend,
          '--prompt',
          `fail\n#offline {"error":${status}}`,
          '--workspace',
          tempDir('sy-once-'),
        ],
        {
          SWITCHYARD_MODEL_URL: model.url,
        },
      );
      expect(r.code).toBe(1);
      expect(r.json).toMatchObject({
        ok: false,
        stopReason: 'error',
        error: {
          code,
          retryable: false,
          message: expect.stringMatching(/Sending it again (unchanged )?will (not help|fail)/),
        },
      });
      expect(model.requests().filter((q) => q.response?.mainTurn)).toHaveLength(1);
    },
  );

  const transient = [
    { status: 429, code: 'provider_rate_limited' },
    { status: 529, code: 'provider_overloaded' },
    { status: 500, code: 'provider_unavailable' },
  ];
  test.each(['claude', 'pi'].flatMap((backend) => transient.map((t) => ({ backend, ...t }))))(
    '$backend: provider $status is retried within SWITCHYARD_CLI_RETRIES, then ok:false with $code, retryable; exit 1',
    async ({ backend, status, code }) => {
      model.reset();
      const r = await run(
        [
          'once',
          '--backend',
          backend,
          '--prompt',
          `fail\n#offline {"error":${status}}`,
          '--workspace',
          tempDir('sy-once-'),
        ],
        {
          SWITCHYARD_MODEL_URL: model.url,
          SWITCHYARD_CLI_RETRIES: '1',
          SWITCHYARD_CLI_RETRY_BASE_MS: '1',
        },
      );
      expect(r.code).toBe(1);
      expect(r.json).toMatchObject({ ok: false, stopReason: 'error', error: { code, retryable: true } });
      expect(model.requests().filter((q) => q.response?.mainTurn)).toHaveLength(2);
    },
  );

  test.each(['claude', 'pi'])(
    '%s: the default retry budget for a 429 is five retries (~15-20 s of backoff), then provider_rate_limited',
    async (backend) => {
      model.reset();
      const r = await run(
        ['once', '--backend', backend, '--prompt', 'fail\n#offline {"error":429}', '--workspace', tempDir('sy-once-')],
        { SWITCHYARD_MODEL_URL: model.url },
      );
      expect(r.json).toMatchObject({ ok: false, error: { code: 'provider_rate_limited', retryable: true } });
      expect(model.requests().filter((q) => q.response?.mainTurn)).toHaveLength(6);
    },
  );

  test('a CLI that answers nothing is an error carrying the first line of its stderr', async () => {
    const r = await run(['once', '--backend', 'pi', '--prompt', 'anything'], {
      SWITCHYARD_MODEL_URL: model.url,
      SWITCHYARD_CLI_EXECUTABLE: JSON.stringify({
        command: process.execPath,
        prefixArgs: [FAKE_CLI, '--fake=stderr-exit'],
      }),
    });
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ ok: false, text: '', stopReason: 'error' });
    const error = r.json.error as { message: string };
    expect(error.message).toContain('fatal: no credentials configured for the fake model');
    expect(error.message).not.toContain('second line');
  });

  test('bad arguments and missing model: JSON error, exit 2', async () => {
    const noPrompt = await run(['once', '--backend', 'pi'], { SWITCHYARD_MODEL_URL: model.url });
    expect(noPrompt).toMatchObject({ code: 2, json: { ok: false, error: { code: 'usage' } } });
    const badBackend = await run(['once', '--backend', 'gpt', '--prompt', 'x'], {});
    expect(badBackend).toMatchObject({ code: 2, json: { ok: false } });
    const noModel = await run(['once', '--backend', 'pi', '--prompt', 'x'], {});
    expect(noModel).toMatchObject({ code: 1, json: { ok: false, error: { code: 'no_model' } } });
  });
});

describe('probe', () => {
  let model: OfflineModel;
  beforeAll(async () => {
    model = await startOfflineModel();
  });
  afterAll(async () => model.close());
  afterEach(() => assertNoOrphans());

  test('reports both backends: installed, pinned version, config valid, credentials present (no value), guard loaded and blocking a canary, bubblewrap', async () => {
    const r = await run(['probe'], { SWITCHYARD_MODEL_URL: model.url, ANTHROPIC_API_KEY: 'sk-must-not-appear-123' });
    expect(r.code).toBe(0);
    expect(r.json).toEqual({
      ok: true,
      backends: ['claude', 'pi'].map((backend) => ({
        backend,
        installed: true,
        version: locateCli(backend as 'claude' | 'pi').version,
        configValid: true,
        credentials: { present: true, source: 'model_url' },
        guard: 'loaded',
        sandbox: 'bubblewrap',
        usable: true,
        problems: [],
      })),
    });
    expect(r.stdout).not.toContain('sk-must-not-appear-123');
  });

  test('no model configured: not usable, says why, exit 1', async () => {
    const r = await run(['probe', '--backend', 'pi'], {});
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({
      ok: false,
      backends: [
        {
          backend: 'pi',
          installed: true,
          configValid: false,
          credentials: { present: false, source: 'none' },
          usable: false,
          problems: [expect.stringContaining('SWITCHYARD_MODEL_URL')],
        },
      ],
    });
  });
});
