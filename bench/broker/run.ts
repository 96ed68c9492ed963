// What the launch broker adds to the edge's ECS calls (docs/DESIGN.md "A leaked edge key running
// its own command"), two ways, each against a baseline measured in the same run:
//   1. over loopback with the real ECS SDK, as the local stack runs it: DescribeTasks and StopTask
//      through the runner host's broker against the same calls straight to the host's ECS API,
//      interleaved (the Lambda's own start and its network hop are not here);
//   2. the broker's own work for one RunTask, in process (verify, check, re-sign), against the same
//      request handed to an upstream that only answers, i.e. the signing and parsing the edge's
//      call costs anyway.
// Usage: node bench/broker/run.ts [--rounds 200]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DescribeTasksCommand, ECSClient, StopTaskCommand } from '@aws-sdk/client-ecs';
import { handleBrokerRequest, loadBrokerConfig } from '@switchyard/launch-broker';
import { signSigV4 } from '@switchyard/protocol';
import { startRunnerHost } from '@switchyard/runner/host';
import { LOCAL_LAUNCH_VARS } from '../../scripts/lib/stack.ts';
import { sessionRunTask } from '../../broker/test/fixtures.ts';
import { median, quantile } from '../stats.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '200' } } });
const rounds = Number(values.rounds);

const RUNNER_BIN = resolve(import.meta.dirname, '..', '..', 'runner', 'bin', 'switchyard-runner.js');
const SETTINGS = { ...LOCAL_LAUNCH_VARS, HUB_ORIGIN: 'http://127.0.0.1:9' };
const hostKey = { accessKeyId: 'AKIDBENCHHOST', secretAccessKey: 'bench-host-secret' };
const edgeKey = { accessKeyId: 'bench-edge', secretAccessKey: 'bench-broker-key-of-some-length-000000' };

const f = (ms: number) => ms.toFixed(3);

async function overLoopback(): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-broker-'));
  const configFile = join(stateDir, 'broker.json');
  writeFileSync(configFile, JSON.stringify(SETTINGS));
  const host = await startRunnerHost({
    entrypoint: { command: process.execPath, args: [RUNNER_BIN] },
    baseEnv: { PATH: process.env.PATH ?? '' },
    credentials: hostKey,
    stateDir,
    broker: { configFile, edgeKey },
  });
  try {
    const direct = new ECSClient({ region: 'us-east-1', endpoint: host.url, credentials: hostKey, maxAttempts: 1 });
    const brokered = new ECSClient({
      region: 'us-east-1',
      endpoint: host.brokerUrl,
      credentials: edgeKey,
      maxAttempts: 1,
    });
    const ghost = `arn:aws:ecs:us-east-1:000000000000:task/switchyard-local/${'f'.repeat(32)}`;
    const calls = {
      DescribeTasks: (c: ECSClient) =>
        c.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [ghost] })).then(() => undefined),
      // An unknown task: ECS's answer is an error, relayed as it came.
      StopTask: (c: ECSClient) =>
        c.send(new StopTaskCommand({ cluster: 'switchyard-local', task: ghost, reason: 'bench' })).then(
          () => undefined,
          () => undefined,
        ),
    };
    console.log(`over loopback, real ECS SDK, ${rounds} interleaved rounds (ms per call: median, p90):`);
    for (const [name, call] of Object.entries(calls)) {
      for (let i = 0; i < 20; i++) await Promise.all([call(direct), call(brokered)]);
      const times = { direct: [] as number[], broker: [] as number[] };
      for (let i = 0; i < rounds; i++) {
        const order: ['direct' | 'broker', ECSClient][] = [
          ['direct', direct],
          ['broker', brokered],
        ];
        if (i % 2 === 1) order.reverse();
        for (const [which, client] of order) {
          const t0 = performance.now();
          await call(client);
          times[which].push(performance.now() - t0);
        }
      }
      const d = median(times.direct);
      const b = median(times.broker);
      console.log(
        `  ${name.padEnd(13)} straight ${f(d)} (p90 ${f(quantile(times.direct, 0.9))})   through the broker ${f(b)} (p90 ${f(quantile(times.broker, 0.9))})   ${(b / d).toFixed(2)}x, +${f(b - d)} ms`,
      );
    }
  } finally {
    await host.close(1_000);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

async function inProcess(): Promise<void> {
  const loaded = loadBrokerConfig({ ...SETTINGS, BROKER_KEY_ID: edgeKey.accessKeyId, RUNNER_IDENTITY: 'off' });
  if (!loaded.ok) throw new Error(loaded.error);
  // The session launch the edge's launcher sends (the broker tests' copy of its shape).
  const body = JSON.stringify(sessionRunTask(loaded.config.rules));
  const headers = {
    host: 'broker.example',
    'content-type': 'application/x-amz-json-1.1',
    'x-amz-target': 'AmazonEC2ContainerServiceV20141113.RunTask',
  };
  const signed = await signSigV4({ method: 'POST', target: '/', headers, body }, edgeKey, {
    region: 'us-east-1',
    service: 'ecs',
  });
  const request = { method: 'POST', target: '/', headers: { ...headers, ...signed }, body: Buffer.from(body) };
  const answer = JSON.stringify({ tasks: [{ taskArn: 'arn:aws:ecs:us-east-1:000000000000:task/x/y' }], failures: [] });
  const upstream = async () => new Response(answer, { headers: { 'content-type': 'application/x-amz-json-1.1' } });
  const deps = { edgeKeys: async () => [edgeKey], upstream: async () => hostKey, fetch: upstream };
  // Baseline: what the call costs without the broker's checks: the edge's own signing of it and the
  // upstream's answer read (the broker adds a verify, the rules and a second signing).
  const baseline = async () => {
    await signSigV4({ method: 'POST', target: '/', headers, body }, edgeKey, { region: 'us-east-1', service: 'ecs' });
    await (await upstream()).text();
  };
  const brokered = async () => {
    const r = await handleBrokerRequest(request, loaded.config, deps);
    if (r.status !== 200) throw new Error(`the broker answered ${r.status}: ${r.body}`);
  };
  const n = rounds * 10;
  for (let i = 0; i < 200; i++) await Promise.all([baseline(), brokered()]);
  const times = { baseline: [] as number[], broker: [] as number[] };
  for (let i = 0; i < n; i++) {
    for (const [which, run] of (i % 2 === 0
      ? [
          ['baseline', baseline],
          ['broker', brokered],
        ]
      : [
          ['broker', brokered],
          ['baseline', baseline],
        ]) as ['baseline' | 'broker', () => Promise<void>][]) {
      const t0 = performance.now();
      await run();
      times[which].push(performance.now() - t0);
    }
  }
  const a = median(times.baseline);
  const b = median(times.broker);
  console.log(
    `in process, one RunTask (${body.length} bytes), ${n} interleaved rounds: one signing + the answer ${f(a)} ms, the broker's handling ${f(b)} ms (${(b / a).toFixed(2)}x)`,
  );
}

await overLoopback();
await inProcess();
