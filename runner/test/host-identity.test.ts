// Runner identity on the local runner host: the container credentials endpoint and the STS
// stand-in, driven by the real AWS SDK (its container credentials provider, STSClient, its SigV4
// signer) and by protocol's runner-identity, as a runner and the edge use them. A task's
// environment is read from /proc, exactly what its process got.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ECSClient, RunTaskCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { fromHttp } from '@aws-sdk/credential-provider-http';
import { Sha256 } from '@smithy/core/checksum';
import { HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import {
  callerArnFromResponse,
  identityRequest,
  type RunnerIdentityProof,
  RUNNER_ID_HEADER,
  signRunnerIdentity,
  signSigV4,
  stsErrorCode,
  type TaskCredentials,
} from '@switchyard/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAUNCHER_OVERRIDES } from '../src/host/ecs-api.ts';
import { startRunnerHost, type RunnerHost } from '../src/host/server.ts';
import type { RecordedStsRequest } from '../src/host/sts.ts';
import { TaskCredentialStore } from '../src/host/task-credentials.ts';
import { until } from '../../test/helpers/poll.ts';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'host-task.ts');
const RUNNER_BIN = resolve(import.meta.dirname, '..', 'bin', 'switchyard-runner.js');
/** The pair the test host accepts for ECS calls. */
const HOST_CREDENTIALS = { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-secret' };
const callerOf = (taskId: string) => `arn:aws:sts::000000000000:assumed-role/switchyard-local-runner/${taskId}`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-host-identity-'));
  dirs.push(d);
  return d;
};

interface StartedTask {
  arn: string;
  id: string;
  /** The container credentials endpoint and token the host put in the task's environment. */
  uri: string;
  token: string;
}

describe('runner identity against the local runner host', () => {
  let host: RunnerHost;
  let ecs: ECSClient;
  const stsRequests: RecordedStsRequest[] = [];

  beforeAll(async () => {
    host = await startRunnerHost({
      entrypoint: { command: process.execPath, args: [FIXTURE] },
      baseEnv: { PATH: process.env.PATH ?? '' },
      credentials: HOST_CREDENTIALS,
      overrideNames: [...LAUNCHER_OVERRIDES, 'HOST_TASK_MODE', 'HOST_TASK_REPORT'],
      stateDir: tempDir(),
      stopTimeoutMs: 2000,
      onStsRequest: (r) => stsRequests.push(r),
    });
    ecs = new ECSClient({ region: 'us-east-1', endpoint: host.url, credentials: HOST_CREDENTIALS, maxAttempts: 1 });
  });
  afterAll(async () => {
    await host.close(1000);
  });

  /** RunTask through the ECS API, then the two variables out of the running process's environment. */
  async function startTask(): Promise<StartedTask> {
    const report = join(tempDir(), 'report.json');
    const out = await ecs.send(
      new RunTaskCommand({
        cluster: 'switchyard-local',
        taskDefinition: 'switchyard-runner',
        launchType: 'FARGATE',
        networkConfiguration: { awsvpcConfiguration: { subnets: ['subnet-local'] } },
        overrides: {
          containerOverrides: [
            {
              name: 'runner',
              environment: [
                { name: 'HOST_TASK_MODE', value: 'tree' },
                { name: 'HOST_TASK_REPORT', value: report },
              ],
            },
          ],
        },
      }),
    );
    const arn = out.tasks?.[0]?.taskArn as string;
    const { pid } = await until(
      'the task report',
      () => (existsSync(report) ? (JSON.parse(readFileSync(report, 'utf8')) as { pid: number }) : undefined),
      30_000,
    );
    const env = new Map(
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter((kv) => kv.includes('='))
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
    );
    return {
      arn,
      id: arn.split('/').at(-1) as string,
      uri: env.get('AWS_CONTAINER_CREDENTIALS_FULL_URI') ?? '',
      token: env.get('AWS_CONTAINER_AUTHORIZATION_TOKEN') ?? '',
    };
  }

  const stopTask = async (t: StartedTask) => {
    await ecs.send(new StopTaskCommand({ cluster: 'switchyard-local', task: t.arn }));
    await host.tasks.waitStopped(t.id);
  };

  /** The SDK's own container credentials provider, one attempt (it retries a second apart otherwise). */
  const sdkCredentials = (uri: string, token: string) =>
    fromHttp({ awsContainerCredentialsFullUri: uri, awsContainerAuthorizationToken: token, maxRetries: 0 })();

  const stsClient = (credentials: TaskCredentials) =>
    new STSClient({ region: 'us-east-1', endpoint: host.stsUrl, credentials, maxAttempts: 1 });

  /** What the edge does with a runner's proof: sends the request it signs to STS. */
  const forward = async (runnerId: string, proof: RunnerIdentityProof) => {
    const r = identityRequest(host.stsUrl, runnerId, proof);
    const res = await fetch(r.url, { method: r.method, headers: r.headers, body: r.body });
    return { status: res.status, text: await res.text() };
  };

  let a: StartedTask;
  let b: StartedTask;
  beforeAll(async () => {
    [a, b] = await Promise.all([startTask(), startTask()]);
  });

  it('each task is told its own endpoint and token, as ECS tells a container', () => {
    expect(a.uri).toBe(`${host.url}/switchyard/credentials/${a.id}`);
    expect(b.uri).toBe(`${host.url}/switchyard/credentials/${b.id}`);
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(b.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.token).not.toBe(b.token);
    expect(host.stsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(host.stsUrl).not.toBe(`${host.url}/`);
  });

  it('the endpoint answers exactly the JSON ECS serves', async () => {
    const res = await fetch(a.uri, { headers: { authorization: a.token } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual(['AccessKeyId', 'Expiration', 'RoleArn', 'SecretAccessKey', 'Token']);
    expect(body.AccessKeyId).toMatch(/^ASIA[A-Z0-9]{16}$/);
    expect(body.SecretAccessKey).toHaveLength(40);
    expect((body.Token ?? '').length).toBeGreaterThan(200);
    expect(body.RoleArn).toBe('arn:aws:iam::000000000000:role/switchyard-local-runner');
    expect(body.RoleArn).toBe(host.taskRoleArn);
    expect(body.Expiration).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const ahead = Date.parse(body.Expiration ?? '') - Date.now();
    expect(ahead).toBeGreaterThan(5 * 3600_000);
    expect(ahead).toBeLessThan(7 * 3600_000);
  });

  it("the SDK's container provider fetches the task's credentials, and STS names the task", async () => {
    const credentials = await sdkCredentials(a.uri, a.token);
    expect(credentials.accessKeyId).toMatch(/^ASIA[A-Z0-9]{16}$/);
    expect(credentials.expiration).toBeInstanceOf(Date);
    stsRequests.length = 0;
    const me = await stsClient(credentials).send(new GetCallerIdentityCommand({}));
    expect(me.Arn).toBe(callerOf(a.id));
    expect(me.Account).toBe('000000000000');
    expect(me.UserId).toMatch(new RegExp(`^AROA[A-Z0-9]{17}:${a.id}$`));
    expect(stsRequests).toHaveLength(1);
    expect(stsRequests[0]).toMatchObject({
      method: 'POST',
      path: '/',
      rawBody: 'Action=GetCallerIdentity&Version=2011-06-15',
      status: 200,
      code: null,
    });
    expect(stsRequests[0]?.headers['x-amz-security-token']).toBe(credentials.sessionToken);
    // The other task is a different caller.
    const other = await stsClient(await sdkCredentials(b.uri, b.token)).send(new GetCallerIdentityCommand({}));
    expect(other.Arn).toBe(callerOf(b.id));
  });

  it("a runner's signed proof, forwarded as the edge does, gets the same ARN", async () => {
    const credentials = await sdkCredentials(a.uri, a.token);
    const proof = await signRunnerIdentity({ url: host.stsUrl, region: 'us-east-1' }, 'runner-a', credentials);
    stsRequests.length = 0;
    const res = await forward('runner-a', proof);
    expect(res.status).toBe(200);
    expect(callerArnFromResponse(res.text)).toBe(callerOf(a.id));
    expect(stsRequests[0]?.headers[RUNNER_ID_HEADER]).toBe('runner-a');
    expect(stsRequests[0]?.headers.authorization).toMatch(/SignedHeaders=[a-z0-9;-]*;x-switchyard-runner[;,]/);
  });

  it('the credentials endpoint refuses a wrong, missing or other task’s token, and unknown tasks', async () => {
    const wrong = await fetch(a.uri, { headers: { authorization: `${a.token.slice(0, -1)}x` } });
    expect(wrong.status).toBe(403);
    const wrongText = await wrong.text();
    expect(wrongText).not.toContain(a.token);
    expect(wrongText).not.toContain('ASIA');
    expect((await fetch(a.uri)).status).toBe(403);
    expect((await fetch(a.uri, { headers: { authorization: b.token } })).status).toBe(403);
    await expect(sdkCredentials(a.uri, b.token)).rejects.toThrow('Server responded with status: 403');
    const unknown = `${host.url}/switchyard/credentials/${'a'.repeat(32)}`;
    expect((await fetch(unknown, { headers: { authorization: a.token } })).status).toBe(404);
  });

  it('STS refuses a tampered proof, a key without its session token or with another’s, and unsigned calls', async () => {
    const credentials = await sdkCredentials(a.uri, a.token);
    const proof = await signRunnerIdentity({ url: host.stsUrl, region: 'us-east-1' }, 'runner-a', credentials);
    // The proof names runner-a; presenting it as runner-b's changes a signed header.
    const swapped = await forward('runner-b', proof);
    expect(swapped.status).toBe(403);
    expect(stsErrorCode(swapped.text)).toBe('SignatureDoesNotMatch');
    expect(swapped.text).toContain('<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">');
    const last = proof.authorization.at(-1) === '0' ? '1' : '0';
    const flipped = await forward('runner-a', {
      ...proof,
      authorization: `${proof.authorization.slice(0, -1)}${last}`,
    });
    expect(flipped.status).toBe(403);
    expect(stsErrorCode(flipped.text)).toBe('SignatureDoesNotMatch');

    // A temporary key signed correctly but sent without its session token, or with another task's.
    const { sessionToken: _, ...bare } = credentials;
    const tokenless = await forward(
      'runner-a',
      await signRunnerIdentity({ url: host.stsUrl, region: 'us-east-1' }, 'runner-a', bare),
    );
    expect(tokenless.status).toBe(403);
    expect(stsErrorCode(tokenless.text)).toBe('InvalidClientTokenId');
    await expect(stsClient(bare).send(new GetCallerIdentityCommand({}))).rejects.toMatchObject({
      name: 'InvalidClientTokenId',
      $metadata: { httpStatusCode: 403 },
    });
    const bToken = (await sdkCredentials(b.uri, b.token)).sessionToken as string;
    await expect(
      stsClient({ ...credentials, sessionToken: bToken }).send(new GetCallerIdentityCommand({})),
    ).rejects.toMatchObject({ name: 'InvalidClientTokenId' });
    // The right key and token with a guessed secret.
    await expect(
      stsClient({ ...credentials, secretAccessKey: 'x'.repeat(40) }).send(new GetCallerIdentityCommand({})),
    ).rejects.toMatchObject({ name: 'SignatureDoesNotMatch' });

    const unsigned = await fetch(host.stsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=GetCallerIdentity&Version=2011-06-15',
    });
    expect(unsigned.status).toBe(403);
    expect(stsErrorCode(await unsigned.text())).toBe('MissingAuthenticationToken');

    // Properly signed, but not an action the stand-in serves.
    const url = new URL(host.stsUrl);
    const headers = {
      host: url.host,
      'content-type': 'application/x-www-form-urlencoded',
      'x-amz-security-token': credentials.sessionToken as string,
    };
    const body = 'Action=AssumeRole&Version=2011-06-15';
    const signed = await signSigV4({ method: 'POST', target: '/', headers, body }, credentials, {
      region: 'us-east-1',
      service: 'sts',
    });
    const other = await fetch(host.stsUrl, { method: 'POST', headers: { ...headers, ...signed }, body });
    expect(other.status).toBe(400);
    expect(stsErrorCode(await other.text())).toBe('InvalidAction');
  });

  it("a stopped task's credentials die with it: the endpoint forgets it, STS says ExpiredToken", async () => {
    const t = await startTask();
    const credentials = await sdkCredentials(t.uri, t.token);
    const proof = await signRunnerIdentity({ url: host.stsUrl, region: 'us-east-1' }, 'runner-t', credentials);
    expect((await stsClient(credentials).send(new GetCallerIdentityCommand({}))).Arn).toBe(callerOf(t.id));
    await stopTask(t);
    expect((await fetch(t.uri, { headers: { authorization: t.token } })).status).toBe(404);
    await expect(sdkCredentials(t.uri, t.token)).rejects.toThrow('Server responded with status: 404');
    await expect(stsClient(credentials).send(new GetCallerIdentityCommand({}))).rejects.toMatchObject({
      name: 'ExpiredToken',
      $metadata: { httpStatusCode: 403 },
    });
    const replayed = await forward('runner-t', proof);
    expect(replayed.status).toBe(403);
    expect(stsErrorCode(replayed.text)).toBe('ExpiredToken');
    // The other tasks' credentials are untouched.
    expect((await stsClient(await sdkCredentials(a.uri, a.token)).send(new GetCallerIdentityCommand({}))).Arn).toBe(
      callerOf(a.id),
    );
  });
});

describe("protocol's runner identity signer", () => {
  it("signs GetCallerIdentity exactly as the AWS SDK's SigV4 signer does", async () => {
    const at = Date.UTC(2026, 11, 7, 4, 0, 0);
    const credentials = {
      accessKeyId: 'ASIAEXAMPLEEXAMPLE12',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE-session-token_with.various+chars/=',
    };
    const endpoint = { url: 'https://sts.eu-west-1.amazonaws.com/', region: 'eu-west-1' };
    const ours = await signRunnerIdentity(endpoint, 'runner-0123', credentials, at);

    const r = identityRequest(endpoint.url, 'runner-0123');
    const sdk = new SignatureV4({
      service: 'sts',
      region: 'eu-west-1',
      credentials,
      sha256: Sha256,
      applyChecksum: false,
    });
    const signed = await sdk.sign(
      new HttpRequest({
        method: r.method,
        protocol: 'https:',
        hostname: 'sts.eu-west-1.amazonaws.com',
        path: '/',
        headers: { ...r.headers },
        body: r.body,
      }),
      { signingDate: new Date(at) },
    );
    expect(ours.amzDate).toBe('20261207T040000Z');
    expect(signed.headers['x-amz-date']).toBe(ours.amzDate);
    expect(signed.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=ASIAEXAMPLEEXAMPLE12\/20261207\/eu-west-1\/sts\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-switchyard-runner, Signature=[0-9a-f]{64}$/,
    );
    expect(ours.authorization).toBe(signed.headers.authorization);
    expect(ours.securityToken).toBe(signed.headers['x-amz-security-token']);
  });
});

describe('task credentials over time', () => {
  it('rotates a set an hour before it expires, keeps the old one valid until then, and ends both with the task', () => {
    let now = Date.UTC(2026, 0, 1);
    const store = new TaskCredentialStore({ roleArn: 'arn:aws:iam::000000000000:role/r', now: () => now });
    const token = store.issue('t1');
    const serve = () => {
      const r = store.serve('t1', token);
      if (r.status !== 200) throw new Error(`status ${r.status}`);
      return r.credentials;
    };
    const first = serve();
    expect(first.Expiration).toBe('2026-01-01T06:00:00Z');
    now += 4 * 3600_000;
    expect(serve().AccessKeyId).toBe(first.AccessKeyId);
    now += 3600_000 + 1000;
    const second = serve();
    expect(second.AccessKeyId).not.toBe(first.AccessKeyId);
    expect(second.Expiration).toBe('2026-01-01T11:00:01Z');
    expect(store.identify(first.AccessKeyId, first.Token)).toMatchObject({ state: 'valid', taskId: 't1' });
    expect(store.identify(first.AccessKeyId, second.Token)).toEqual({ state: 'unknown' });
    now += 3600_000;
    expect(store.identify(first.AccessKeyId, first.Token)).toEqual({ state: 'expired' });
    expect(store.identify(second.AccessKeyId, second.Token)).toMatchObject({ state: 'valid' });
    store.revoke('t1');
    expect(store.identify(second.AccessKeyId, second.Token)).toEqual({ state: 'expired' });
    expect(store.serve('t1', token)).toEqual({ status: 404 });
  });
});

describe('`switchyard-runner host` ready line', () => {
  it('names the STS stand-in and the task role next to the ECS endpoint', async () => {
    const stateDir = tempDir();
    const child = spawn(process.execPath, [RUNNER_BIN, 'host', '--state-dir', stateDir, '--stop-timeout', '5s'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: {
        ...process.env,
        SWITCHYARD_HOST_ACCESS_KEY_ID: 'AKIDCLITEST',
        SWITCHYARD_HOST_SECRET_ACCESS_KEY: 'cli-secret',
      },
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    try {
      const ready = await until(
        'ready line',
        () =>
          stdout.includes('\n') ? (JSON.parse(stdout.split('\n')[0] as string) as Record<string, unknown>) : undefined,
        30_000,
      );
      expect(Object.keys(ready).sort()).toEqual(['cluster', 'port', 'stateDir', 'stsUrl', 'taskRoleArn', 'url']);
      expect(ready.taskRoleArn).toBe('arn:aws:iam::000000000000:role/switchyard-local-runner');
      expect(ready.stsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const unsigned = await fetch(ready.stsUrl as string, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'Action=GetCallerIdentity&Version=2011-06-15',
      });
      expect(stsErrorCode(await unsigned.text())).toBe('MissingAuthenticationToken');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
