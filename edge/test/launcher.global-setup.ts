// Runs in Node before the edge's workerd tests: starts the local runner host (the ECS API
// stand-in, with real `switchyard-runner` processes as tasks) and a loopback endpoint that
// hands the workerd tests every request the host received, so they can assert on exactly what
// the AWS SDK sent from inside workerd. The host's launch broker takes the requests of
// launch-broker.test.ts, whose settings are written here. The URLs reach the tests through
// `provide`/`inject`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startRunnerHost, type RecordedEcsRequest } from '@switchyard/runner/host';
import { BROKER_ENV, BROKER_KEY } from './launch-broker-env.ts';

const RUNNER_BIN = resolve(import.meta.dirname, '..', '..', 'runner', 'bin', 'switchyard-runner.js');

export default async function setup(project: TestProject) {
  const stateDir = mkdtempSync(join(tmpdir(), 'switchyard-edge-host-'));
  const requests: RecordedEcsRequest[] = [];
  const brokerConfig = join(stateDir, 'broker.json');
  writeFileSync(brokerConfig, JSON.stringify(BROKER_ENV));
  const host = await startRunnerHost({
    entrypoint: { command: process.execPath, args: [RUNNER_BIN] },
    // The "task definition" env: a model endpoint that is never called (probe only checks config).
    baseEnv: {
      PATH: process.env.PATH ?? '',
      SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9',
      SWITCHYARD_LINK_BACKOFF_MAX: '1s',
    },
    // The pair launcher.test.ts gives the launcher (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
    credentials: { accessKeyId: 'AKIDWORKERDTEST', secretAccessKey: 'workerd-secret-key' },
    stateDir,
    stopTimeoutMs: 10_000,
    onRequest: (r) => requests.push(r),
    broker: { configFile: brokerConfig, edgeKey: BROKER_KEY },
  });
  const recorder = http.createServer((req, res) => {
    if (req.method === 'DELETE') requests.length = 0;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.method === 'DELETE' ? '[]' : JSON.stringify(requests));
  });
  await new Promise<void>((r) => recorder.listen(0, '127.0.0.1', () => r()));
  project.provide('launcherHost', {
    url: host.url,
    stsUrl: host.stsUrl,
    brokerUrl: host.brokerUrl ?? '',
    recorderUrl: `http://127.0.0.1:${(recorder.address() as AddressInfo).port}/requests`,
  });
  return async () => {
    await host.close(5_000);
    recorder.closeAllConnections();
    await new Promise<void>((r) => recorder.close(() => r()));
    rmSync(stateDir, { recursive: true, force: true });
  };
}
