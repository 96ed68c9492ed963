import { describe, expect, it } from 'vitest';
import { LAUNCH_ENV_NAMES, launchEnvironment } from '../src/index.ts';

const input = {
  hubUrl: 'wss://edge.example/internal/runner/connect',
  sessionId: 'ses_1',
  backend: 'claude' as const,
  runnerId: 'launch-1',
  idleMs: 900_000,
  maxLifetimeMs: 28_800_000.4,
  runnerToken: 'syr1.a.b',
  model: null,
};

describe('launchEnvironment', () => {
  it('names every value the runner reads and omits a null model', () => {
    const env = launchEnvironment(input);
    expect(env).toEqual({
      SWITCHYARD_HUB_URL: input.hubUrl,
      SWITCHYARD_SESSION_ID: 'ses_1',
      SWITCHYARD_BACKEND: 'claude',
      SWITCHYARD_RUNNER_ID: 'launch-1',
      SWITCHYARD_IDLE_TIMEOUT: '900000ms',
      SWITCHYARD_MAX_LIFETIME: '28800000ms',
      SWITCHYARD_RUNNER_TOKEN: 'syr1.a.b',
    });
    expect(launchEnvironment({ ...input, model: 'm' }).SWITCHYARD_MODEL).toBe('m');
    for (const name of Object.keys(env)) expect(LAUNCH_ENV_NAMES).toContain(name);
  });
  it('refuses a value the runner would refuse', () => {
    expect(() => launchEnvironment({ ...input, sessionId: '' })).toThrow();
    expect(() => launchEnvironment({ ...input, idleMs: -1 })).toThrow();
  });
});
