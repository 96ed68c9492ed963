import { launchEnvironment } from '@switchyard/protocol';
import { describe, expect, test } from 'vitest';
import { loadServeConfig, parseDuration } from '../../src/config.ts';
import { resolveModelAccess } from '../../src/model-access.ts';
import { backoffDelay } from '../../src/serve/backoff.ts';
import { EventBuffer } from '../../src/serve/event-buffer.ts';

describe('EventBuffer', () => {
  const frame = (seq: number) => `{"seq":${seq}}`;

  test('assigns consecutive seqs from 1, keeps frames until acked, resends after a given seq', () => {
    const b = new EventBuffer({ maxFrames: 10, maxBytes: 1000 });
    for (let i = 0; i < 5; i++) b.push('event', frame);
    expect(b.lastSeq).toBe(5);
    expect(b.after(2).map((f) => f.seq)).toEqual([3, 4, 5]);
    expect(b.ack(3)).toEqual({ ok: true, value: 3 });
    expect(b.size).toBe(2);
    expect(b.after(0).map((f) => f.seq)).toEqual([4, 5]);
    // An old ack is harmless; an ack beyond what exists is an error.
    expect(b.ack(1)).toEqual({ ok: true, value: 0 });
    expect(b.ack(9)).toMatchObject({ ok: false, error: { code: 'ack_beyond_last_seq' } });
  });

  test('overflow by frame count fails, and stays failed: nothing is dropped silently', () => {
    const b = new EventBuffer({ maxFrames: 2, maxBytes: 1000 });
    b.push('event', frame);
    b.push('event', frame);
    expect(b.push('event', frame)).toMatchObject({ ok: false, error: { code: 'buffer_overflow' } });
    b.ack(2);
    expect(b.push('event', frame)).toMatchObject({ ok: false });
    expect(b.failed).toBe(true);
    expect(b.lastSeq).toBe(2);
  });

  test('overflow by bytes', () => {
    const b = new EventBuffer({ maxFrames: 100, maxBytes: 20 });
    expect(b.push('transcript', () => 'x'.repeat(15)).ok).toBe(true);
    expect(b.push('event', () => 'y'.repeat(10)).ok).toBe(false);
  });
});

describe('backoffDelay', () => {
  const opts = { baseMs: 100, maxMs: 2000 };
  test('grows exponentially within [window/2, window], capped', () => {
    expect(backoffDelay(0, opts, () => 0)).toBe(50);
    expect(backoffDelay(0, opts, () => 1)).toBe(100);
    expect(backoffDelay(3, opts, () => 0)).toBe(400);
    expect(backoffDelay(3, opts, () => 1)).toBe(800);
    expect(backoffDelay(50, opts, () => 1)).toBe(2000);
    expect(backoffDelay(50, opts, () => 0)).toBe(1000);
  });
  test('jitter spreads runners apart', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(4, opts)));
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe('config', () => {
  const base = {
    SWITCHYARD_HUB_URL: 'ws://127.0.0.1:1/internal/runner/connect',
    SWITCHYARD_SESSION_ID: 's1',
    SWITCHYARD_RUNNER_TOKEN: 'secret-token-value-123',
    SWITCHYARD_BACKEND: 'pi',
  };

  test('durations', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('10s')).toBe(10_000);
    expect(parseDuration('1.5m')).toBe(90_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('1500')).toBe(1500);
    expect(parseDuration('ten')).toBeUndefined();
  });

  test('defaults fit ECS: the shutdown deadline is below the 30 s stop timeout', () => {
    const c = loadServeConfig(base, '/w');
    expect(c.ok && c.value.timings).toMatchObject({
      interruptDeadlineMs: 10_000,
      shutdownDeadlineMs: 25_000,
      idleMs: 900_000,
    });
    expect(c.ok && c.value.workspace).toBe('/w');
  });

  test('what a launcher writes (protocol launchEnvironment) is a serve configuration, read as written', () => {
    const env = launchEnvironment({
      hubUrl: 'wss://edge.example.com/internal/runner/connect',
      sessionId: 's1',
      backend: 'claude',
      runnerId: 'r1',
      idleMs: 60_000,
      maxLifetimeMs: 3_600_000,
      runnerToken: 'secret-token-value-123',
      model: 'claude-sonnet-4-5',
    });
    const c = loadServeConfig(env, '/w');
    expect(c.ok && c.value).toMatchObject({
      hubUrl: env.SWITCHYARD_HUB_URL,
      sessionId: 's1',
      backend: 'claude',
      runnerId: 'r1',
      runnerToken: 'secret-token-value-123',
      modelName: 'claude-sonnet-4-5',
      timings: { idleMs: 60_000, maxLifetimeMs: 3_600_000 },
    });
  });

  test("the CLI retry budget is 5 retries from 500 ms unless set (the CLIs' own defaults differ: claude ~3 minutes)", () => {
    const c = loadServeConfig(base, '/w');
    expect(c.ok && c.value.retry).toEqual({ maxRetries: 5, baseDelayMs: 500 });
    const set = loadServeConfig({ ...base, SWITCHYARD_CLI_RETRIES: '0', SWITCHYARD_CLI_RETRY_BASE_MS: '1' }, '/w');
    expect(set.ok && set.value.retry).toEqual({ maxRetries: 0, baseDelayMs: 1 });
  });

  test("the CLI's compile cache: none unless set, an absolute directory when set", () => {
    const c = loadServeConfig(base, '/w');
    expect(c.ok && c.value.cliCompileCache).toBeUndefined();
    const set = loadServeConfig({ ...base, SWITCHYARD_CLI_COMPILE_CACHE: '/app/cli-compile-cache' }, '/w');
    expect(set.ok && set.value.cliCompileCache).toBe('/app/cli-compile-cache');
    const relative = loadServeConfig({ ...base, SWITCHYARD_CLI_COMPILE_CACHE: 'cli-compile-cache' }, '/w');
    expect(relative.ok ? '' : relative.error.message).toBe('SWITCHYARD_CLI_COMPILE_CACHE: must be an absolute path');
  });

  test('errors name the variable and never echo a value', () => {
    const c = loadServeConfig(
      { ...base, SWITCHYARD_HUB_URL: 'http://x', SWITCHYARD_STALL_TIMEOUT: 'soon', SWITCHYARD_BACKEND: 'gpt' },
      '/w',
    );
    expect(c.ok).toBe(false);
    const message = c.ok ? '' : c.error.message;
    expect(message).toContain('SWITCHYARD_HUB_URL');
    expect(message).toContain('SWITCHYARD_STALL_TIMEOUT');
    expect(message).toContain('SWITCHYARD_BACKEND');
    expect(message).not.toContain('secret-token-value-123');
    const missing = loadServeConfig({ ...base, SWITCHYARD_RUNNER_TOKEN: '' }, '/w');
    expect(missing.ok ? '' : missing.error.message).toContain('SWITCHYARD_RUNNER_TOKEN');
  });

  test('the hub is dialled over wss:// except on loopback; ws:// to anywhere else is a configuration error', () => {
    for (const url of [
      'wss://edge.example.com/internal/runner/connect',
      'ws://127.0.0.1:8787/x',
      'ws://localhost:8787/x',
      'ws://[::1]:8787/x',
      'ws://dev.localhost/x',
    ]) {
      expect(loadServeConfig({ ...base, SWITCHYARD_HUB_URL: url }, '/w').ok, url).toBe(true);
    }
    for (const url of [
      'ws://edge.example.com/internal/runner/connect',
      'ws://10.0.0.5:8787/x',
      'ws://127.0.0.1.evil.test/x',
      'ws://localhost.evil.test/x',
    ]) {
      const c = loadServeConfig({ ...base, SWITCHYARD_HUB_URL: url }, '/w');
      expect(c.ok, url).toBe(false);
      expect(c.ok ? '' : c.error.message).toMatch(/SWITCHYARD_HUB_URL.*wss:\/\//);
    }
  });

  test('model selection: endpoint wins over provider key; none is a typed error', () => {
    const withUrl = loadServeConfig(
      { ...base, SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'k' },
      '/w',
    );
    expect(withUrl.ok && withUrl.value.model).toEqual({ kind: 'endpoint', baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
    const withKey = loadServeConfig({ ...base, ANTHROPIC_API_KEY: 'k' }, '/w');
    expect(withKey.ok && resolveModelAccess(withKey.value.model)).toMatchObject({
      ok: true,
      value: { baseUrl: 'https://api.anthropic.com', credential: 'provider_key' },
    });
    const none = loadServeConfig(base, '/w');
    expect(none.ok && resolveModelAccess(none.value.model)).toMatchObject({ ok: false, error: { code: 'no_model' } });
  });
});
