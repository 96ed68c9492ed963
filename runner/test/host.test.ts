// The local runner host against the real AWS SDK (`@aws-sdk/client-ecs`, the client the edge's
// launcher uses): exact requests, real runner processes, exit codes, process-group kills.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
  type RunTaskCommandInput,
} from '@aws-sdk/client-ecs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { signSigV4 } from '@switchyard/protocol';
import { taskBaseEnv } from '../src/host/cli.ts';
import { hostFetch } from '../src/host/client.ts';
import { LAUNCHER_OVERRIDES } from '../src/host/ecs-api.ts';
import { claimStateDir, readProc } from '../src/host/process-tree.ts';
import { startRunnerHost, type RecordedEcsRequest, type RunnerHost } from '../src/host/server.ts';
import { reapStaleTasks } from '../src/host/stale-tasks.ts';
import { until } from '../../test/helpers/poll.ts';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'host-task.ts');
const RUNNER_BIN = resolve(import.meta.dirname, '..', 'bin', 'switchyard-runner.js');
const TARGET = 'AmazonEC2ContainerServiceV20141113.';
const TASK_ARN = /^arn:aws:ecs:us-east-1:000000000000:task\/switchyard-local\/[0-9a-f]{32}$/;

const alive = (pid: number) => {
  const p = readProc(pid);
  return p !== undefined && p.state !== 'Z' && p.state !== 'X';
};

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-host-test-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The pair the test hosts accept. */
const CREDENTIALS = { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-secret' };
/** The stand-in task (fixtures/host-task.ts) is steered by these, on top of what the launcher sets. */
const FIXTURE_OVERRIDES = [
  ...LAUNCHER_OVERRIDES,
  'HOST_TASK_MODE',
  'HOST_TASK_EXIT',
  'HOST_TASK_REPORT',
  'HOST_TASK_IGNORE_TERM',
];

function client(host: RunnerHost, region = 'us-east-1', credentials = CREDENTIALS) {
  return new ECSClient({ region, endpoint: host.url, credentials, maxAttempts: 1 });
}

const runInput = (env: Record<string, string>, extra: Partial<RunTaskCommandInput> = {}): RunTaskCommandInput => ({
  cluster: 'switchyard-local',
  taskDefinition: 'switchyard-runner',
  launchType: 'FARGATE',
  count: 1,
  startedBy: 'switchyard',
  networkConfiguration: {
    awsvpcConfiguration: { subnets: ['subnet-local'], securityGroups: ['sg-local'], assignPublicIp: 'DISABLED' },
  },
  overrides: {
    containerOverrides: [
      { name: 'runner', environment: Object.entries(env).map(([name, value]) => ({ name, value })) },
    ],
  },
  ...extra,
});

describe('runner host with a stand-in task', () => {
  let host: RunnerHost;
  let ecs: ECSClient;
  const requests: RecordedEcsRequest[] = [];
  const logs: string[] = [];
  let stateDir: string;

  beforeAll(async () => {
    stateDir = tempDir();
    host = await startRunnerHost({
      entrypoint: { command: process.execPath, args: [FIXTURE] },
      baseEnv: { PATH: process.env.PATH ?? '', SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9' },
      credentials: CREDENTIALS,
      overrideNames: FIXTURE_OVERRIDES,
      stateDir,
      stopTimeoutMs: 1500,
      sampleIntervalMs: 50,
      onRequest: (r) => requests.push(r),
      log: (l) => logs.push(l),
    });
    ecs = client(host);
  });
  afterAll(async () => {
    await host.close(1000);
  });
  afterEach(() => {
    requests.length = 0;
  });

  it('receives exactly the RunTask the SDK sends: signed JSON 1.1 POST / with the target header', async () => {
    const input = runInput(
      { HOST_TASK_MODE: 'exit', HOST_TASK_EXIT: '0', SWITCHYARD_SESSION_ID: 's1' },
      { clientToken: 'launch-01' },
    );
    const out = await ecs.send(new RunTaskCommand(input));
    expect(out.tasks?.[0]?.taskArn).toMatch(TASK_ARN);
    expect(out.tasks?.[0]?.lastStatus).toBe('PROVISIONING');
    expect(out.failures).toEqual([]);

    expect(requests).toHaveLength(1);
    const r = requests[0] as RecordedEcsRequest;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/');
    expect(r.headers['x-amz-target']).toBe(`${TARGET}RunTask`);
    expect(r.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(r.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDLOCALTEST\/\d{8}\/us-east-1\/ecs\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*x-amz-date[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(r.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(r.body).toEqual(input);
    expect(r.status).toBe(200);
  });

  it('the SDK adds a clientToken when none is given', async () => {
    await ecs.send(new RunTaskCommand(runInput({ HOST_TASK_MODE: 'exit' })));
    expect((requests[0]?.body as { clientToken?: string } | undefined)?.clientToken).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('DescribeTasks after the process exits reports STOPPED with its exit code', async () => {
    const out = await ecs.send(new RunTaskCommand(runInput({ HOST_TASK_MODE: 'exit', HOST_TASK_EXIT: '7' })));
    const arn = out.tasks?.[0]?.taskArn as string;
    const task = await until(
      'STOPPED',
      async () => {
        const d = await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] }));
        const t = d.tasks?.[0];
        return t?.lastStatus === 'STOPPED' ? t : undefined;
      },
      30_000,
    );
    expect(task.desiredStatus).toBe('STOPPED');
    expect(task.stopCode).toBe('EssentialContainerExited');
    expect(task.stoppedReason).toBe('Essential container in task exited');
    expect(task.containers?.[0]?.exitCode).toBe(7);
    expect(task.containers?.[0]?.name).toBe('runner');
    expect(task.stoppedAt).toBeInstanceOf(Date);
    const describe = requests.find((r) => r.target === `${TARGET}DescribeTasks`);
    expect(describe?.body).toEqual({ cluster: 'switchyard-local', tasks: [arn] });
  });

  it('ListTasks (the broker counts with it): the tasks desired RUNNING, paged; a stopped one is gone; unknown tokens and filters refused', async () => {
    const dir = tempDir();
    const arns: string[] = [];
    for (const n of [1, 2]) {
      const out = await ecs.send(
        new RunTaskCommand(runInput({ HOST_TASK_MODE: 'tree', HOST_TASK_REPORT: join(dir, `${n}.json`) })),
      );
      arns.push(out.tasks?.[0]?.taskArn as string);
    }
    const all = async (maxResults?: number) => {
      const seen: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await ecs.send(
          new ListTasksCommand({ cluster: 'switchyard-local', desiredStatus: 'RUNNING', maxResults, nextToken }),
        );
        seen.push(...(page.taskArns ?? []));
        nextToken = page.nextToken;
      } while (nextToken !== undefined);
      return seen;
    };
    const listed = await all();
    expect(listed).toEqual(expect.arrayContaining(arns));
    expect(await all(1)).toEqual(listed);

    await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: arns[0] }));
    expect(await all()).not.toContain(arns[0]);
    expect(await all()).toContain(arns[1]);
    await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: arns[1] }));

    const badToken = await ecs
      .send(new ListTasksCommand({ cluster: 'switchyard-local', nextToken: 'made-up' }))
      .catch((e: unknown) => e as Error);
    expect(badToken).toMatchObject({
      name: 'InvalidParameterException',
      message: expect.stringContaining('nextToken'),
    });
    const filtered = await ecs
      .send(new ListTasksCommand({ cluster: 'switchyard-local', family: 'switchyard-runner' }))
      .catch((e: unknown) => e as Error);
    expect(filtered).toMatchObject({ name: 'InvalidParameterException' });
  });

  it('the task gets the task-definition env plus the overrides, in its own workspace', async () => {
    const report = join(tempDir(), 'report.json');
    const out = await ecs.send(
      new RunTaskCommand(
        runInput({
          HOST_TASK_MODE: 'tree',
          HOST_TASK_REPORT: report,
          SWITCHYARD_SESSION_ID: 'sess-1',
          SWITCHYARD_RUNNER_TOKEN: 'tok-secret-123456',
        }),
      ),
    );
    const arn = out.tasks?.[0]?.taskArn as string;
    const seen = await until(
      'report',
      () =>
        existsSync(report)
          ? (JSON.parse(readFileSync(report, 'utf8')) as {
              pid: number;
              env: Record<string, string>;
              cwd: string;
              argv: string[];
            })
          : undefined,
      30_000,
    );
    expect(seen.env.SWITCHYARD_SESSION_ID).toBe('sess-1');
    expect(seen.env.SWITCHYARD_RUNNER_TOKEN).toBe('tok-secret-123456');
    expect(seen.env.SWITCHYARD_MODEL_URL).toBe('http://127.0.0.1:9');
    expect(seen.cwd).toBe(seen.env.SWITCHYARD_WORKSPACE);
    expect(seen.cwd.startsWith(stateDir)).toBe(true);
    expect(seen.argv).toEqual(['serve']);
    const listed = (
      (await (await hostFetch(host.url, '/switchyard/tasks', CREDENTIALS)).json()) as {
        tasks: { taskArn: string; pid: number; sessionId: string; lastStatus: string }[];
      }
    ).tasks;
    expect(listed.find((t) => t.taskArn === arn)).toMatchObject({
      sessionId: 'sess-1',
      lastStatus: 'RUNNING',
      pid: seen.pid,
    });
    expect(JSON.stringify(listed)).not.toContain('tok-secret-123456');
    await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: arn }));
    await host.tasks.waitStopped(arn.split('/').at(-1) as string);
    expect(logs.join('\n')).not.toContain('tok-secret-123456');
    expect(existsSync(seen.cwd)).toBe(false);
  });

  it('StopTask: SIGTERM, then SIGKILL to every process group of the task after the stop timeout; no orphans', async () => {
    const report = join(tempDir(), 'report.json');
    const out = await ecs.send(
      new RunTaskCommand(runInput({ HOST_TASK_MODE: 'tree', HOST_TASK_REPORT: report, HOST_TASK_IGNORE_TERM: '1' })),
    );
    const arn = out.tasks?.[0]?.taskArn as string;
    const { pid, children } = await until(
      'report',
      () =>
        existsSync(report)
          ? (JSON.parse(readFileSync(report, 'utf8')) as { pid: number; children: number[] })
          : undefined,
      30_000,
    );
    const id = arn.split('/').at(-1) as string;
    // The detached child leads its own group; the host must have seen it before it stops the task.
    await until(
      'the child group sampled',
      () => host.tasks.processes(id)?.groups.includes(children[0] as number),
      30_000,
    );
    expect([pid, ...children].every(alive)).toBe(true);

    const started = Date.now();
    const stop = await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: arn, reason: 'idle' }));
    expect(stop.task?.desiredStatus).toBe('STOPPED');
    expect(stop.task?.lastStatus).toBe('STOPPING');
    const task = await until(
      'STOPPED',
      async () => {
        const t = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] }))).tasks?.[0];
        return t?.lastStatus === 'STOPPED' ? t : undefined;
      },
      30_000,
    );
    // It ignored SIGTERM, so only the SIGKILL after the 1.5 s stop timeout ended it.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(task.containers?.[0]?.exitCode).toBe(137);
    expect(task.stopCode).toBe('UserInitiated');
    expect(task.stoppedReason).toBe('idle');
    expect([pid, ...children].filter(alive)).toEqual([]);
  });

  it('a task that exits on SIGTERM leaving a detached child behind: the host kills the child too', async () => {
    const report = join(tempDir(), 'report.json');
    const out = await ecs.send(new RunTaskCommand(runInput({ HOST_TASK_MODE: 'tree', HOST_TASK_REPORT: report })));
    const arn = out.tasks?.[0]?.taskArn as string;
    const id = arn.split('/').at(-1) as string;
    const { pid, children } = await until(
      'report',
      () =>
        existsSync(report)
          ? (JSON.parse(readFileSync(report, 'utf8')) as { pid: number; children: number[] })
          : undefined,
      30_000,
    );
    await until(
      'the child group sampled',
      () => host.tasks.processes(id)?.groups.includes(children[0] as number),
      30_000,
    );
    await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: arn }));
    await host.tasks.waitStopped(id);
    const t = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] }))).tasks?.[0];
    expect(t?.containers?.[0]?.exitCode).toBe(0);
    expect(t?.stoppedReason).toBe('Task stopped by user');
    expect([pid, ...children].filter(alive)).toEqual([]);
  });

  it('answers with ECS errors: unsigned, wrong service, wrong cluster, missing network, unknown task, unknown operation, a body over 1 MiB', async () => {
    const raw = (headers: Record<string, string>, body: unknown) =>
      fetch(host.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-amz-json-1.1', ...headers },
        body: JSON.stringify(body),
      });
    const unsigned = await raw({ 'x-amz-target': `${TARGET}DescribeTasks` }, { tasks: ['x'] });
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toEqual({
      __type: 'MissingAuthenticationTokenException',
      message: 'Missing Authentication Token',
    });
    const wrongService = await raw(
      {
        'x-amz-target': `${TARGET}DescribeTasks`,
        'x-amz-date': '20260101T000000Z',
        authorization: `AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
      },
      { tasks: ['x'] },
    );
    expect(((await wrongService.json()) as { __type: string }).__type).toBe('InvalidSignatureException');

    await expect(ecs.send(new RunTaskCommand(runInput({}, { cluster: 'prod' })))).rejects.toMatchObject({
      name: 'ClusterNotFoundException',
    });
    await expect(ecs.send(new RunTaskCommand(runInput({}, { networkConfiguration: undefined })))).rejects.toMatchObject(
      {
        name: 'InvalidParameterException',
        message: expect.stringContaining('Network Configuration'),
      },
    );
    await expect(
      ecs.send(
        new RunTaskCommand(runInput({}, { overrides: { containerOverrides: [{ name: 'web', environment: [] }] } })),
      ),
    ).rejects.toMatchObject({ name: 'InvalidParameterException' });
    const missing = `arn:aws:ecs:us-east-1:000000000000:task/switchyard-local/${'a'.repeat(32)}`;
    await expect(ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: missing }))).rejects.toMatchObject({
      name: 'InvalidParameterException',
      message: 'The referenced task was not found.',
    });
    const d = await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [missing] }));
    expect(d.tasks).toEqual([]);
    expect(d.failures).toEqual([{ arn: missing, reason: 'MISSING' }]);
    const listClusters = {
      host: new URL(host.url).host,
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': `${TARGET}ListClusters`,
    };
    const signed = await signSigV4({ method: 'POST', target: '/', headers: listClusters, body: '{}' }, CREDENTIALS, {
      region: 'us-east-1',
      service: 'ecs',
    });
    const unknown = await raw({ 'x-amz-target': `${TARGET}ListClusters`, ...signed }, {});
    expect(((await unknown.json()) as { __type: string }).__type).toBe('UnknownOperationException');
    const huge = await raw({ 'x-amz-target': `${TARGET}DescribeTasks` }, { pad: 'x'.repeat(1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { __type: string }).__type).toBe('SerializationException');
  });

  it('reaps the tasks of a host that died without stopping them', async () => {
    const dir = tempDir();
    // What a crashed host leaves: a running record for a task tree nobody will stop.
    const leader = spawn(process.execPath, [FIXTURE], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, HOST_TASK_MODE: 'tree', HOST_TASK_REPORT: join(dir, 'r.json') },
    });
    leader.unref();
    const { pid, children } = await until(
      'report',
      () =>
        existsSync(join(dir, 'r.json'))
          ? (JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')) as { pid: number; children: number[] })
          : undefined,
      30_000,
    );
    mkdirSync(join(dir, 'running'), { recursive: true });
    const self = readProc(pid);
    writeFileSync(
      join(dir, 'running', 'abc.json'),
      JSON.stringify({ id: 'abc', pid, startTime: self?.startTime, groups: [pid] }),
    );
    expect(reapStaleTasks(dir)).toBe(1);
    await until('all gone', () => [pid, ...children].every((p) => !alive(p)), 30_000);
    expect(existsSync(join(dir, 'running', 'abc.json'))).toBe(false);
  });

  it('never leaves a record half written while it rewrites one, and drops what a crash left half written', async () => {
    const dir = tempDir();
    const file = join(dir, 'running', 'abc.json');
    // The host rewrites a task's record as its process groups change. Another process (the next
    // host's reaper, had this one been killed at that instant) reads it meanwhile.
    const rewrites = 5_000;
    const writer = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { recordRunning } from ${JSON.stringify(resolve(import.meta.dirname, '..', 'src', 'host', 'stale-tasks.ts'))};
        for (let i = 1; i <= ${rewrites}; i++)
          recordRunning(${JSON.stringify(dir)}, { id: 'abc', pid: 1, startTime: 1, groups: [...Array(i % 50).keys()].map((k) => k + 1).concat(i) });`,
      ],
      { stdio: 'inherit' },
    );
    const exited = new Promise<number | null>((r) => writer.once('exit', r));
    await until('the first record', () => existsSync(file), 30_000);
    let reads = 0;
    const unreadable: string[] = [];
    // Until the last record; a writer that died before it ends the loop too (checked now and then).
    for (let last = 0; last !== rewrites && (reads % 100 !== 0 || alive(writer.pid as number)); reads++) {
      const text = readFileSync(file, 'utf8');
      try {
        last = (JSON.parse(text) as { groups: number[] }).groups.at(-1) ?? 0;
      } catch {
        unreadable.push(text);
      }
    }
    expect(await exited).toBe(0);
    expect(reads).toBeGreaterThan(100);
    expect(unreadable).toEqual([]);

    // What a host killed mid-write leaves: the previous record whole, the next one in part.
    writeFileSync(`${file}.part`, '{"id":"abc","pid":');
    expect(reapStaleTasks(dir)).toBe(0);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.part`)).toBe(false);
  });
});

describe('the task-definition environment the host CLI derives from its own', () => {
  it('passes model access and runner tuning, never per-session values, host secrets or unrelated variables', () => {
    expect(
      taskBaseEnv({
        PATH: '/bin',
        LANG: 'C.UTF-8',
        ANTHROPIC_API_KEY: 'sk-test',
        SWITCHYARD_MODEL_URL: 'http://127.0.0.1:1',
        SWITCHYARD_SANDBOX: 'bubblewrap',
        SWITCHYARD_RUNNER_TOKEN: 'stale-token',
        SWITCHYARD_SESSION_ID: 'x',
        SWITCHYARD_ADMIN_PASSWORD: 'dev-admin-password',
        SWITCHYARD_HOST_ANYTHING: '1',
        AWS_SECRET_ACCESS_KEY: 'aws',
        GITHUB_TOKEN: 'gh',
      }),
    ).toEqual({
      PATH: '/bin',
      LANG: 'C.UTF-8',
      ANTHROPIC_API_KEY: 'sk-test',
      SWITCHYARD_MODEL_URL: 'http://127.0.0.1:1',
      SWITCHYARD_SANDBOX: 'bubblewrap',
    });
  });
});

describe('claimStateDir', () => {
  it('refuses a directory a live process holds, takes over one whose holder is gone', async () => {
    const dir = tempDir();
    const file = join(dir, 'owner.json');
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)'], { stdio: 'ignore' });
    await new Promise((r) => holder.once('spawn', r));
    const pid = holder.pid as number;
    writeFileSync(file, JSON.stringify({ pid, startTime: readProc(pid)?.startTime }));
    expect(() => claimStateDir(file, 'the dir')).toThrow(`the dir is in use by process ${pid}`);
    // Same pid number, different start time: a recycled pid, not the holder.
    writeFileSync(file, JSON.stringify({ pid, startTime: 1 }));
    const release = claimStateDir(file, 'the dir');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid });
    release();
    expect(existsSync(file)).toBe(false);
    writeFileSync(file, JSON.stringify({ pid, startTime: readProc(pid)?.startTime }));
    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    await until('the holder reaped', () => !alive(pid), 30_000);
    claimStateDir(file, 'the dir')();
  });
});

describe('runner host with the real switchyard-runner', () => {
  it('a runner with bad configuration exits 2, and DescribeTasks says so', async () => {
    const host = await startRunnerHost({
      entrypoint: { command: process.execPath, args: [RUNNER_BIN] },
      baseEnv: { PATH: process.env.PATH ?? '' },
      credentials: CREDENTIALS,
      stateDir: tempDir(),
      stopTimeoutMs: 5000,
    });
    try {
      const ecs = client(host);
      // No hub URL, token or backend: `serve` refuses its configuration.
      const out = await ecs.send(new RunTaskCommand(runInput({ SWITCHYARD_SESSION_ID: 's' })));
      const arn = out.tasks?.[0]?.taskArn as string;
      const t = await until(
        'STOPPED',
        async () => {
          const x = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] })))
            .tasks?.[0];
          return x?.lastStatus === 'STOPPED' ? x : undefined;
        },
        30_000,
      );
      expect(t.containers?.[0]?.exitCode).toBe(2);
      expect(t.stopCode).toBe('EssentialContainerExited');
    } finally {
      await host.close(1000);
    }
  });

  it('`switchyard-runner host` serves until SIGINT, then stops its runners and exits 0', async () => {
    const stateDir = tempDir();
    const child = spawn(process.execPath, [RUNNER_BIN, 'host', '--state-dir', stateDir, '--stop-timeout', '5s'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9',
        SWITCHYARD_HOST_ACCESS_KEY_ID: 'AKIDCLITEST',
        SWITCHYARD_HOST_SECRET_ACCESS_KEY: 'cli-secret-key',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const spawned: ChildProcess[] = [child];
    try {
      const ready = await until(
        'ready line',
        () =>
          stdout.includes('\n')
            ? (JSON.parse(stdout.split('\n')[0] as string) as { url: string; port: number })
            : undefined,
        30_000,
      );
      const forged = new ECSClient({
        region: 'eu-west-1',
        endpoint: ready.url,
        credentials: { accessKeyId: 'AKIDCLITEST', secretAccessKey: 'guessed' },
        maxAttempts: 1,
      });
      await expect(
        forged.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: ['x'] })),
      ).rejects.toMatchObject({ name: 'InvalidSignatureException' });
      const ecs = new ECSClient({
        region: 'eu-west-1',
        endpoint: ready.url,
        credentials: { accessKeyId: 'AKIDCLITEST', secretAccessKey: 'cli-secret-key' },
        maxAttempts: 1,
      });
      // A real `serve` whose hub never answers keeps retrying: a long-lived runner.
      const out = await ecs.send(
        new RunTaskCommand(
          runInput({
            SWITCHYARD_HUB_URL: 'ws://127.0.0.1:9/internal/runner/connect',
            SWITCHYARD_SESSION_ID: 's',
            SWITCHYARD_BACKEND: 'pi',
            SWITCHYARD_RUNNER_TOKEN: 'tok-abcdefgh',
          }),
        ),
      );
      const arn = out.tasks?.[0]?.taskArn as string;
      expect(arn).toMatch(/^arn:aws:ecs:eu-west-1:000000000000:task\/switchyard-local\/[0-9a-f]{32}$/);
      const running = await until(
        'RUNNING',
        async () => {
          const t = (await ecs.send(new DescribeTasksCommand({ cluster: 'switchyard-local', tasks: [arn] })))
            .tasks?.[0];
          return t?.lastStatus === 'RUNNING' ? t : undefined;
        },
        30_000,
      );
      const pid = Number(running.containers?.[0]?.runtimeId?.split('-').at(-1));
      expect(alive(pid)).toBe(true);
      // A second host on the same state directory would reap this one's tasks: it refuses.
      const second = spawn(process.execPath, [RUNNER_BIN, 'host', '--state-dir', stateDir], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      spawned.push(second);
      let secondErr = '';
      second.stderr.setEncoding('utf8').on('data', (d: string) => (secondErr += d));
      const secondExit = new Promise<number | null>((r) => second.once('exit', (code) => r(code)));
      expect(await until('the second host to refuse', () => secondExit, 30_000)).toBe(2);
      expect(secondErr).toContain(`is in use by process ${child.pid}`);
      expect(alive(pid)).toBe(true);
      child.kill('SIGINT');
      expect(await until('host exit', () => exited, 60_000)).toBe(0);
      expect(alive(pid)).toBe(false);
      expect(stderr).toContain('STOPPED');
      expect(stderr).not.toContain('tok-abcdefgh');
    } finally {
      for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      reapStaleTasks(stateDir); // a host killed here could not stop its runner
    }
  });
});

// What an agent on this machine would send the host if it could reach it (the sandbox's network
// namespace is what keeps it from doing so; test/escape/stack-escape.test.ts): every forged request
// is refused and starts nothing.
describe('forged requests to the runner host', () => {
  let host: RunnerHost;
  let stateDir: string;
  const marker = join(tmpdir(), `switchyard-node-options-${process.pid}-${Date.now()}`);
  beforeAll(async () => {
    stateDir = tempDir();
    host = await startRunnerHost({
      entrypoint: { command: process.execPath, args: [RUNNER_BIN] },
      baseEnv: { PATH: process.env.PATH ?? '', SWITCHYARD_MODEL_URL: 'http://127.0.0.1:9' },
      credentials: CREDENTIALS,
      stateDir,
      stopTimeoutMs: 2000,
    });
  });
  afterAll(async () => {
    await host.close(1000);
    rmSync(marker, { force: true });
  });
  const launcherEnv = {
    SWITCHYARD_HUB_URL: 'ws://127.0.0.1:9/internal/runner/connect',
    SWITCHYARD_SESSION_ID: 's',
    SWITCHYARD_BACKEND: 'pi',
    SWITCHYARD_RUNNER_TOKEN: 'tok-abcdefgh',
  };
  const post = (headers: Record<string, string>, body: string) =>
    fetch(host.url, { method: 'POST', headers: { 'content-type': 'application/x-amz-json-1.1', ...headers }, body });
  const runTaskBody = JSON.stringify(runInput(launcherEnv));
  const runTaskHeaders = (h: RunnerHost) => ({
    host: new URL(h.url).host,
    'content-type': 'application/x-amz-json-1.1',
    'x-amz-target': `${TARGET}RunTask`,
  });

  it('RunTask unsigned, with a made-up signature, signed with a guessed secret or an unknown key: refused, no task', async () => {
    const unsigned = await post({ 'x-amz-target': `${TARGET}RunTask` }, runTaskBody);
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toEqual({
      __type: 'MissingAuthenticationTokenException',
      message: 'Missing Authentication Token',
    });
    const madeUp = await post(
      {
        'x-amz-target': `${TARGET}RunTask`,
        'x-amz-date': new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, ''),
        authorization: `AWS4-HMAC-SHA256 Credential=AKIDLOCALTEST/${new Date().toISOString().slice(0, 10).replace(/-/g, '')}/us-east-1/ecs/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
      },
      runTaskBody,
    );
    expect(madeUp.status).toBe(403);
    expect(await madeUp.json()).toMatchObject({
      __type: 'InvalidSignatureException',
      message: expect.stringContaining('signature we calculated does not match'),
    });
    await expect(
      client(host, 'us-east-1', { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'guessed' }).send(
        new RunTaskCommand(runInput(launcherEnv)),
      ),
    ).rejects.toMatchObject({
      name: 'InvalidSignatureException',
    });
    await expect(
      client(host, 'us-east-1', { accessKeyId: 'AKIDOTHER', secretAccessKey: 'local-secret' }).send(
        new RunTaskCommand(runInput(launcherEnv)),
      ),
    ).rejects.toMatchObject({
      name: 'UnrecognizedClientException',
    });
    expect(host.tasks.list()).toEqual([]);
  });

  it('a captured signature does not carry over to another body, and a stale one has expired', async () => {
    const signed = await signSigV4(
      { method: 'POST', target: '/', headers: runTaskHeaders(host), body: runTaskBody },
      CREDENTIALS,
      { region: 'us-east-1', service: 'ecs' },
    );
    const evil = JSON.stringify(runInput({ ...launcherEnv, SWITCHYARD_SESSION_ID: 'other' }));
    const swapped = await post({ 'x-amz-target': `${TARGET}RunTask`, ...signed }, evil);
    expect(((await swapped.json()) as { __type: string }).__type).toBe('InvalidSignatureException');
    const old = await signSigV4(
      { method: 'POST', target: '/', headers: runTaskHeaders(host), body: runTaskBody },
      CREDENTIALS,
      { region: 'us-east-1', service: 'ecs', now: Date.now() - 10 * 60_000 },
    );
    const stale = await post({ 'x-amz-target': `${TARGET}RunTask`, ...old }, runTaskBody);
    expect(await stale.json()).toMatchObject({
      __type: 'InvalidSignatureException',
      message: expect.stringContaining('expired'),
    });
    expect(host.tasks.list()).toEqual([]);
  });

  it.each([
    [
      'NODE_OPTIONS',
      `--import=data:text/javascript,import('node:fs').then(f=>f.writeFileSync(${JSON.stringify(marker)},'pwned'))`,
    ],
    ['SWITCHYARD_SANDBOX', 'none'],
    ['SWITCHYARD_CLI_EXECUTABLE', '{"command":"/bin/sh","prefixArgs":["-c","id"]}'],
    ['SWITCHYARD_MODEL_URL', 'http://attacker.invalid'],
    ['LD_PRELOAD', '/tmp/evil.so'],
    ['SWITCHYARD_HOST_SECRET_ACCESS_KEY', 'x'],
  ])(
    'a properly signed RunTask overriding %s is refused with InvalidParameterException naming it; nothing runs',
    async (name, value) => {
      await expect(
        client(host).send(new RunTaskCommand(runInput({ ...launcherEnv, [name]: value }))),
      ).rejects.toMatchObject({
        name: 'InvalidParameterException',
        message: expect.stringContaining(`${name} may not be overridden on the local runner host`),
      });
      expect(host.tasks.list()).toEqual([]);
      expect(existsSync(marker)).toBe(false);
    },
  );

  it('a command other than serve or probe is refused', async () => {
    const input = runInput(launcherEnv);
    const overrides = {
      containerOverrides: [
        {
          name: 'runner',
          command: ['once', '--backend', 'pi', '--prompt', 'x'],
          environment: input.overrides?.containerOverrides?.[0]?.environment ?? [],
        },
      ],
    };
    await expect(client(host).send(new RunTaskCommand({ ...input, overrides }))).rejects.toMatchObject({
      name: 'InvalidParameterException',
      message: expect.stringContaining('runs only `serve` and `probe --backend claude|pi`'),
    });
    expect(host.tasks.list()).toEqual([]);
  });

  it('/switchyard/probe and /switchyard/tasks need a signature too', async () => {
    for (const [method, path] of [
      ['POST', '/switchyard/probe'],
      ['GET', '/switchyard/tasks'],
    ] as const) {
      const res = await fetch(`${host.url}${path}`, {
        method,
        ...(method === 'POST' && { body: JSON.stringify({ backend: 'pi' }) }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        __type: 'MissingAuthenticationTokenException',
        message: 'Missing Authentication Token',
      });
    }
    const forged = await hostFetch(
      host.url,
      '/switchyard/probe',
      { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'guessed' },
      { method: 'POST', body: JSON.stringify({ backend: 'pi' }) },
    );
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { __type: string }).__type).toBe('InvalidSignatureException');
    const listed = await hostFetch(host.url, '/switchyard/tasks', CREDENTIALS);
    expect(await listed.json()).toEqual({ tasks: [] });
  });

  it("the launcher's own RunTask is accepted", async () => {
    const out = await client(host).send(new RunTaskCommand(runInput(launcherEnv)));
    const arn = out.tasks?.[0]?.taskArn as string;
    expect(arn).toMatch(TASK_ARN);
    await client(host).send(new StopTaskCommand({ cluster: 'switchyard-local', task: arn }));
    await host.tasks.waitStopped(arn.split('/').at(-1) as string);
  });
});
