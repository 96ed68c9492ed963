// handleBrokerRequest end to end over loopback sockets: the real `@aws-sdk/client-ecs` signs and
// sends what the edge sends to a server that hands each raw request to the broker; the broker
// forwards to a second server playing ECS, which verifies the broker's own SigV4 and records
// exactly what it got. So the real SDK's signature, target and body pass the broker, the SDK
// reads the broker's refusals as errors, and ECS only ever sees checked bodies signed upstream.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import {
  DescribeTasksCommand,
  ECSClient,
  ExecuteCommandCommand,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import { type AwsCredentials, signSigV4, type SigV4Credentials, verifySigV4 } from '@switchyard/protocol';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type BrokerDeps, handleBrokerRequest } from '../src/broker.ts';
import { type BrokerConfig, loadBrokerConfig } from '../src/config.ts';
import { checkRequest } from '../src/rules.ts';
import {
  HUB_ORIGIN,
  POOL_TOKEN,
  pooledRunTask,
  probeRunTask,
  REGION,
  RULES,
  RUNNER_TOKEN,
  type RunTaskBody,
  sdkError,
  sessionRunTask,
  setVar,
  taskArn,
  withEnv,
} from './fixtures.ts';
import { close, headersOf, listen, readAll } from './loopback.ts';

const JSON_11 = 'application/x-amz-json-1.1';
const TARGET = 'AmazonEC2ContainerServiceV20141113.';
/** What the edge signs with: the broker key under its key id. */
const EDGE_KEY: SigV4Credentials = {
  accessKeyId: 'SWITCHYARDBROKERKEY',
  secretAccessKey: 'broker-key-2f1c0e9d8b7a6f5e4d3c2b1a0f9e8d7c',
};
/** The broker's own (temporary) credentials, the only ones ECS accepts. */
const UPSTREAM: Required<AwsCredentials> = {
  accessKeyId: 'ASIAUPSTREAMBROKER',
  secretAccessKey: 'upstream-secret-9a8b7c6d5e4f',
  sessionToken: 'upstream-session-token-IQoJb3JpZ2luX2Vj',
};
const SECRETS = [RUNNER_TOKEN, POOL_TOKEN, EDGE_KEY.secretAccessKey, UPSTREAM.secretAccessKey, UPSTREAM.sessionToken];

type Verified = Awaited<ReturnType<typeof verifySigV4>>;
interface EcsCall {
  method: string;
  path: string;
  headers: Record<string, string>;
  raw: string;
  /** The broker's signature, checked against UPSTREAM as ECS would. */
  auth: Verified;
  /** The task ARN the fake ECS answered with, if any. */
  answeredArn?: string;
}
interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// --- the fake ECS -------------------------------------------------------------------------------
/** What ECS got of the edge's requests (the broker's own ListTasks are in `listCalls`). */
const ecsCalls: EcsCall[] = [];
/** The broker's counting of running tasks before each RunTask. */
const listCalls: EcsCall[] = [];
/** Set by a test to answer the edge's requests otherwise than ECS's success. */
let ecsReply: ((call: EcsCall) => Reply) | null = null;
/** Set by a test to answer ListTasks otherwise than with `running`, a page at a time. */
let listReply: ((call: EcsCall) => Reply) | null = null;
/** The tasks ECS counts as desired RUNNING: RunTask adds one, StopTask takes it away. */
const running: string[] = [];
let arnCounter = 0;

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': JSON_11, ...headers },
  body: JSON.stringify(value),
});

/** What ECS answers a verified request: a new task, a stopping one, or descriptions. */
function ecsSuccess(call: EcsCall): Reply {
  const body = JSON.parse(call.raw) as { cluster: string; task?: string; tasks?: string[] };
  switch (call.headers['x-amz-target']) {
    case `${TARGET}RunTask`: {
      arnCounter += 1;
      call.answeredArn = `arn:aws:ecs:${REGION}:123456789012:task/${body.cluster}/${arnCounter.toString(16).padStart(32, '0')}`;
      running.push(call.answeredArn);
      return json(200, { tasks: [{ taskArn: call.answeredArn, lastStatus: 'PROVISIONING' }], failures: [] });
    }
    case `${TARGET}StopTask`:
      if (running.includes(body.task ?? '')) running.splice(running.indexOf(body.task ?? ''), 1);
      return json(200, { task: { taskArn: body.task, lastStatus: 'RUNNING', desiredStatus: 'STOPPED' } });
    case `${TARGET}DescribeTasks`:
      return json(200, { tasks: (body.tasks ?? []).map((t) => ({ taskArn: t, lastStatus: 'RUNNING' })), failures: [] });
    default:
      return json(400, { __type: 'UnknownOperationException' }, { 'x-amzn-errortype': 'UnknownOperationException' });
  }
}

/** ListTasks over `running`, paged as ECS pages (`maxResults`, an opaque `nextToken`). */
function listRunning(call: EcsCall): Reply {
  const body = JSON.parse(call.raw) as { maxResults?: number; nextToken?: string };
  const from = body.nextToken === undefined ? 0 : Number(Buffer.from(body.nextToken, 'base64url').toString());
  const to = from + (body.maxResults ?? 100);
  return json(200, {
    taskArns: running.slice(from, to),
    ...(to < running.length && { nextToken: Buffer.from(String(to)).toString('base64url') }),
  });
}

const ecsServer = createServer((req, res) => {
  void (async () => {
    const raw = await readAll(req);
    const headers = headersOf(req);
    const auth = await verifySigV4(
      { method: req.method ?? '', target: req.url ?? '', headers, body: new Uint8Array(raw) },
      UPSTREAM,
      { service: 'ecs' },
    );
    const call: EcsCall = { method: req.method ?? '', path: req.url ?? '', headers, raw: raw.toString('utf8'), auth };
    const listing = headers['x-amz-target'] === `${TARGET}ListTasks`;
    (listing ? listCalls : ecsCalls).push(call);
    const reply = !auth.ok
      ? json(403, { __type: auth.type, message: auth.message }, { 'x-amzn-errortype': auth.type })
      : listing
        ? (listReply ?? listRunning)(call)
        : (ecsReply ?? ecsSuccess)(call);
    res.writeHead(reply.status, reply.headers).end(reply.body);
  })();
});

// --- the broker, behind a loopback server as behind its function URL ------------------------------
const logLines: string[] = [];
const brokerAnswers: string[] = [];
let current: { config: BrokerConfig; deps: BrokerDeps };

const baseDeps = (): BrokerDeps => ({
  edgeKeys: async () => [EDGE_KEY],
  upstream: async () => UPSTREAM,
  log: (line) => logLines.push(line),
});

const brokerServer = createServer((req, res) => {
  void (async () => {
    const body = await readAll(req);
    const r = await handleBrokerRequest(
      { method: req.method ?? '', target: req.url ?? '', headers: headersOf(req), body: new Uint8Array(body) },
      current.config,
      current.deps,
    ).catch((err: unknown): { status: number; headers: Record<string, string>; body: string } => ({
      status: 599,
      headers: {},
      body: `the broker threw: ${err instanceof Error ? err.message : String(err)}`,
    }));
    brokerAnswers.push(r.body);
    res.writeHead(r.status, r.headers).end(r.body);
  })();
});

let ecsUrl = '';
let brokerUrl = '';
let CONFIG: BrokerConfig;
const clients: ECSClient[] = [];

/** The edge's client as EcsLauncher builds it, pointed at the broker (one attempt: no retry hides a refusal). */
function edgeClient(o: { region?: string; credentials?: SigV4Credentials } = {}): ECSClient {
  const c = new ECSClient({
    region: o.region ?? REGION,
    endpoint: brokerUrl,
    credentials: o.credentials ?? EDGE_KEY,
    maxAttempts: 1,
  });
  clients.push(c);
  return c;
}

/** A request signed with the edge key by hand (protocol's signSigV4), for bodies the SDK cannot send. */
async function signedPost(
  body: string | Uint8Array<ArrayBuffer>,
  o: { operation?: string; headers?: Record<string, string>; key?: SigV4Credentials } = {},
): Promise<{ status: number; type: string | null; body: string }> {
  const url = new URL(brokerUrl);
  const headers: Record<string, string> = {
    host: url.host,
    'content-type': JSON_11,
    'x-amz-target': `${TARGET}${o.operation ?? 'RunTask'}`,
    ...o.headers,
  };
  const signed = await signSigV4({ method: 'POST', target: '/', headers, body }, o.key ?? EDGE_KEY, {
    region: REGION,
    service: 'ecs',
  });
  const { host: _host, ...sent } = headers;
  const res = await fetch(url, { method: 'POST', headers: { ...sent, ...signed }, body });
  return { status: res.status, type: res.headers.get('x-amzn-errortype'), body: await res.text() };
}

/** ECS got one request, signed by the broker with its own key (never the edge's), session token included. */
function expectSignedUpstream(call: EcsCall | undefined, operation: string): void {
  expect(call?.method).toBe('POST');
  expect(call?.path).toBe('/');
  expect(call?.headers['x-amz-target']).toBe(`${TARGET}${operation}`);
  expect(call?.headers['content-type']).toBe(JSON_11);
  expect(call?.auth).toEqual({ ok: true, accessKeyId: UPSTREAM.accessKeyId, region: REGION, service: 'ecs' });
  const auth = call?.headers.authorization ?? '';
  expect(auth).toMatch(
    new RegExp(
      `^AWS4-HMAC-SHA256 Credential=${UPSTREAM.accessKeyId}/\\d{8}/${REGION}/ecs/aws4_request, SignedHeaders=`,
    ),
  );
  expect(auth).not.toContain(EDGE_KEY.accessKeyId);
  const signedHeaders = /SignedHeaders=([a-z0-9;-]+)/.exec(auth)?.[1]?.split(';');
  expect(signedHeaders).toEqual(
    expect.arrayContaining(['host', 'x-amz-date', 'x-amz-target', 'content-type', 'x-amz-security-token']),
  );
  expect(call?.headers['x-amz-security-token']).toBe(UPSTREAM.sessionToken);
  // Nothing of the edge's request rides along: not its SDK's headers, not its payload hash.
  expect(call?.headers['amz-sdk-invocation-id']).toBeUndefined();
  expect(call?.headers['x-amz-content-sha256']).toBeUndefined();
}

/** The body checkRequest passes on, serialized as the broker serializes it. */
function checkedBytes(operation: 'RunTask' | 'StopTask' | 'DescribeTasks', body: unknown): string {
  const v = checkRequest(operation, body, CONFIG.rules);
  if (!v.ok) throw new Error(`the fixture does not pass the rules: ${v.field}: ${v.message}`);
  return JSON.stringify(v.body);
}

beforeAll(async () => {
  ecsUrl = await listen(ecsServer);
  brokerUrl = await listen(brokerServer);
  const loaded = loadBrokerConfig({
    ECS_CLUSTER: RULES.cluster,
    ECS_TASK_DEFINITION: RULES.taskDefinition,
    ECS_SUBNETS: RULES.subnets.join(', '),
    ECS_SECURITY_GROUPS: RULES.securityGroups.join(','),
    AWS_REGION: REGION,
    HUB_ORIGIN,
    BROKER_KEY_ID: EDGE_KEY.accessKeyId,
    ECS_ENDPOINT: ecsUrl,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  CONFIG = loaded.config;
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await Promise.all([close(ecsServer), close(brokerServer)]);
});

beforeEach(() => {
  ecsCalls.length = 0;
  listCalls.length = 0;
  running.length = 0;
  logLines.length = 0;
  brokerAnswers.length = 0;
  ecsReply = null;
  listReply = null;
  current = { config: CONFIG, deps: baseDeps() };
});

afterEach(() => {
  // Neither the log nor any answer to the edge carries a token or a key.
  const seen = [...logLines, ...brokerAnswers].join('\n');
  for (const secret of SECRETS) expect(seen).not.toContain(secret);
});

describe('the broker between the real ECS SDK and ECS', () => {
  it('the configuration the broker runs with is the deployment the fixtures are built for', () => {
    expect(CONFIG.rules).toEqual(RULES);
    expect(CONFIG.ecsEndpoint).toBe(ecsUrl);
  });

  it('a session RunTask is checked, forwarded as checked, signed upstream, and its task comes back', async () => {
    const input = sessionRunTask(CONFIG.rules);
    const out = await edgeClient().send(new RunTaskCommand(input));
    expect(ecsCalls).toHaveLength(1);
    const [call] = ecsCalls;
    expectSignedUpstream(call, 'RunTask');
    // Exactly the checked body: what the SDK sent, re-serialized from what was checked.
    expect(JSON.parse(call?.raw ?? '')).toEqual(input);
    expect(call?.raw).toBe(checkedBytes('RunTask', input));
    expect(call?.answeredArn).toMatch(/^arn:aws:ecs:eu-central-1:123456789012:task\/switchyard-prod\/[0-9a-f]{32}$/);
    expect(out.tasks?.[0]?.taskArn).toBe(call?.answeredArn);
    expect(logLines).toEqual(['RunTask → 200']);
  });

  it('a pooled RunTask passes the same way', async () => {
    const input = pooledRunTask(CONFIG.rules);
    const out = await edgeClient().send(new RunTaskCommand(input));
    const [call, ...rest] = ecsCalls;
    expect(rest).toEqual([]);
    expectSignedUpstream(call, 'RunTask');
    expect(call?.raw).toBe(checkedBytes('RunTask', input));
    expect(out.tasks?.[0]?.taskArn).toBe(call?.answeredArn);
  });

  // The SDK fills in RunTask's clientToken (an idempotency token) with a UUID when the input has
  // none, as EcsLauncher.probeViaTask's has not: a probe refused for it could never pass the broker.
  it('a probe RunTask as the SDK sends it passes', async () => {
    const input = probeRunTask(CONFIG.rules, 'pi');
    const out = await edgeClient().send(new RunTaskCommand(input));
    const [call] = ecsCalls;
    expectSignedUpstream(call, 'RunTask');
    expect(out.tasks?.[0]?.taskArn).toBe(call?.answeredArn);
  });

  it('StopTask and DescribeTasks pass, and their answers come back', async () => {
    const arn = taskArn(CONFIG.rules, 'feedfacefeedfacefeedfacefeedface');
    const client = edgeClient();
    const stopped = await client.send(
      new StopTaskCommand({ cluster: CONFIG.rules.cluster, task: arn, reason: 'idle' }),
    );
    expect(stopped.task).toMatchObject({ taskArn: arn, desiredStatus: 'STOPPED' });
    const described = await client.send(new DescribeTasksCommand({ cluster: CONFIG.rules.cluster, tasks: [arn] }));
    expect(described.tasks?.map((t) => t.taskArn)).toEqual([arn]);
    expect(ecsCalls).toHaveLength(2);
    expectSignedUpstream(ecsCalls[0], 'StopTask');
    expect(ecsCalls[0]?.raw).toBe(JSON.stringify({ cluster: CONFIG.rules.cluster, task: arn, reason: 'idle' }));
    expectSignedUpstream(ecsCalls[1], 'DescribeTasks');
    expect(ecsCalls[1]?.raw).toBe(JSON.stringify({ cluster: CONFIG.rules.cluster, tasks: [arn] }));
  });

  it.each<[string, (b: RunTaskBody) => RunTaskBody, string]>([
    [
      'a command override',
      (b) => ({
        ...b,
        overrides: { containerOverrides: [{ ...b.overrides.containerOverrides[0]!, command: ['sh', '-c', 'env'] }] },
      }),
      'overrides.containerOverrides.0.command',
    ],
    [
      'a hub URL on another origin',
      (b) => withEnv(b, (env) => setVar(env, 'SWITCHYARD_HUB_URL', 'wss://attacker.example/internal/runner/connect')),
      'overrides.containerOverrides.0.environment.SWITCHYARD_HUB_URL',
    ],
    [
      'NODE_OPTIONS',
      (b) => withEnv(b, (env) => setVar(env, 'NODE_OPTIONS', '--require=/tmp/x.js')),
      'overrides.containerOverrides.0.environment.NODE_OPTIONS',
    ],
    ['ECS Exec', (b) => ({ ...b, enableExecuteCommand: true }), 'enableExecuteCommand'],
    [
      'a public IP',
      (b) => ({
        ...b,
        networkConfiguration: {
          awsvpcConfiguration: { ...b.networkConfiguration.awsvpcConfiguration, assignPublicIp: 'ENABLED' },
        },
      }),
      'networkConfiguration.awsvpcConfiguration.assignPublicIp',
    ],
  ])(
    '%s is refused: the SDK reads AccessDeniedException naming the field, ECS gets nothing',
    async (_n, mutate, field) => {
      const err = await sdkError(edgeClient().send(new RunTaskCommand(mutate(sessionRunTask(CONFIG.rules)))));
      expect(err.name).toBe('AccessDeniedException');
      expect(err.status).toBe(403);
      expect(err.message).toContain(`refused ${field}:`);
      expect(ecsCalls).toEqual([]);
      expect(logLines).toEqual([`refused: RunTask ${field}`]);
    },
  );

  it('a task role override the SDK serializes is refused as an unknown key', async () => {
    const input = sessionRunTask(CONFIG.rules);
    const err = await sdkError(
      edgeClient().send(
        new RunTaskCommand({ ...input, overrides: { ...input.overrides, taskRoleArn: 'arn:aws:iam::1:role/admin' } }),
      ),
    );
    expect(err.name).toBe('AccessDeniedException');
    expect(err.message).toContain('taskRoleArn');
    expect(ecsCalls).toEqual([]);
  });

  it('a request signed with another secret under the broker key id: 403 InvalidSignatureException', async () => {
    const wrong = { ...EDGE_KEY, secretAccessKey: 'another-secret-of-the-same-length-0000000' };
    const err = await sdkError(
      edgeClient({ credentials: wrong }).send(new RunTaskCommand(sessionRunTask(CONFIG.rules))),
    );
    expect(err).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    expect(err.message).toContain('signature we calculated does not match');
    expect(ecsCalls).toEqual([]);
    expect(logLines).toEqual(['refused: InvalidSignatureException']);
  });

  it('after a rotation, the current and the previous key pass (the previous one said in the log); any other is refused', async () => {
    const previous = { ...EDGE_KEY, secretAccessKey: 'the-broker-key-before-the-rotation-000000' };
    const rotated = { ...EDGE_KEY, secretAccessKey: 'the-broker-key-after-the-rotation-1111111' };
    current = { config: CONFIG, deps: { ...baseDeps(), edgeKeys: async () => [rotated, previous] } };
    for (const credentials of [rotated, previous])
      await edgeClient({ credentials }).send(new RunTaskCommand(sessionRunTask(CONFIG.rules)));
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules))));
    expect(err).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    expect(ecsCalls).toHaveLength(2);
    expect(logLines).toEqual([
      'RunTask → 200',
      'signed with the previous broker key',
      'RunTask → 200',
      'refused: InvalidSignatureException',
    ]);
  });

  it('a request signed with the upstream key instead of the broker key: 403 UnrecognizedClientException', async () => {
    const err = await sdkError(
      edgeClient({ credentials: UPSTREAM }).send(new RunTaskCommand(sessionRunTask(CONFIG.rules))),
    );
    expect(err).toMatchObject({ name: 'UnrecognizedClientException', status: 403 });
    expect(ecsCalls).toEqual([]);
  });

  it('a request signed for another region: 403', async () => {
    const err = await sdkError(
      edgeClient({ region: 'us-west-2' }).send(new RunTaskCommand(sessionRunTask(CONFIG.rules))),
    );
    expect(err).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    expect(err.message).toContain(`valid region: ${REGION}`);
    expect(ecsCalls).toEqual([]);
  });

  it.each<[string, (c: ECSClient) => Promise<unknown>]>([
    [
      'RegisterTaskDefinition',
      (c) =>
        c.send(
          new RegisterTaskDefinitionCommand({
            family: 'admin',
            containerDefinitions: [{ name: 'x', image: 'alpine' }],
          }),
        ),
    ],
    [
      'ExecuteCommand',
      (c) =>
        c.send(
          new ExecuteCommandCommand({ cluster: RULES.cluster, task: 'abc', command: '/bin/sh', interactive: true }),
        ),
    ],
    ['ListTasks', (c) => c.send(new ListTasksCommand({ cluster: RULES.cluster }))],
  ])('%s, an operation the broker does not pass on: 403 AccessDeniedException', async (operation, send) => {
    const err = await sdkError(send(edgeClient()));
    expect(err).toMatchObject({ name: 'AccessDeniedException', status: 403 });
    expect(err.message).toContain('passes on only RunTask, StopTask, DescribeTasks');
    expect(ecsCalls).toEqual([]);
    expect(logLines).toEqual([`refused: operation ${operation}`]);
  });

  it.each<[string, string | Uint8Array<ArrayBuffer>]>([
    ['not JSON', '{"cluster": '],
    ['not UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
  ])('a signed body that is %s: 400 SerializationException', async (_name, body) => {
    const res = await signedPost(body);
    expect(res.status).toBe(400);
    expect(res.type).toBe('SerializationException');
    expect(JSON.parse(res.body)).toEqual({ __type: 'SerializationException', message: 'the body is not JSON' });
    expect(ecsCalls).toEqual([]);
  });

  it('a signed request of another content type: 400 SerializationException', async () => {
    const res = await signedPost(JSON.stringify(sessionRunTask(CONFIG.rules)), {
      headers: { 'content-type': 'application/json' },
    });
    expect(res).toMatchObject({ status: 400, type: 'SerializationException' });
    expect(ecsCalls).toEqual([]);
  });

  it('an unsigned request is refused before anything is read', async () => {
    const res = await fetch(brokerUrl, {
      method: 'POST',
      headers: { 'content-type': JSON_11, 'x-amz-target': `${TARGET}RunTask` },
      body: JSON.stringify(sessionRunTask(CONFIG.rules)),
    });
    expect(res.headers.get('x-amzn-errortype')).toBe('MissingAuthenticationTokenException');
    expect(res.status).toBeGreaterThanOrEqual(400);
    await res.body?.cancel();
    expect(ecsCalls).toEqual([]);
  });

  it.each([
    ['GET', '/'],
    ['POST', '/2014-11-13/RunTask'],
    ['POST', '/?Action=RunTask'],
  ])('%s %s: 404 UnknownOperationException', async (method, path) => {
    const res = await fetch(new URL(path, brokerUrl), { method });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
    await res.body?.cancel();
    expect(ecsCalls).toEqual([]);
  });

  it('a signature more than five minutes from the broker’s clock is refused; within five it passes', async () => {
    current.deps = { ...baseDeps(), now: () => Date.now() + 6 * 60_000 };
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules))));
    expect(err).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    expect(err.message).toContain('more than 5 minutes');
    expect(ecsCalls).toEqual([]);

    current.deps = { ...baseDeps(), now: () => Date.now() + 4 * 60_000 };
    await edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules)));
    expect(ecsCalls).toHaveLength(1);
  });

  it.each<[string, Record<string, string>]>([
    [
      'in x-amzn-errortype',
      { 'x-amzn-errortype': 'ClusterNotFoundException:http://internal.amazon.com/coral/com.amazonaws.ecs/' },
    ],
    ['in the body only', {}],
  ])('an ECS error (its type %s) is relayed so the SDK reads it', async (_name, headers) => {
    ecsReply = () => json(400, { __type: 'ClusterNotFoundException', message: 'Cluster not found.' }, headers);
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules))));
    expect(err).toEqual({ name: 'ClusterNotFoundException', message: 'Cluster not found.', status: 400 });
    expect(ecsCalls).toHaveLength(1);
    expect(logLines).toEqual(['RunTask → 400']);
  });

  it('ECS unreachable: 503 ServiceUnavailableException', async () => {
    const closed = createServer();
    const closedUrl = await listen(closed);
    await close(closed);
    current.config = { ...CONFIG, ecsEndpoint: `${closedUrl}/` };
    const arn = taskArn(CONFIG.rules, 'feedfacefeedfacefeedfacefeedface');
    const err = await sdkError(edgeClient().send(new StopTaskCommand({ cluster: CONFIG.rules.cluster, task: arn })));
    expect(err).toMatchObject({ name: 'ServiceUnavailableException', status: 503 });
    expect(err.message).toContain('could not reach ECS');
    expect(logLines).toEqual(['StopTask: ECS unreachable (TypeError)']);
  });

  it('a body with a duplicate key: ECS gets the re-serialized body, the key once, the value checked', async () => {
    const arn = taskArn(CONFIG.rules, 'dddddddddddddddddddddddddddddddd');
    const crafted = `{"cluster":"someone-elses","cluster":${JSON.stringify(CONFIG.rules.cluster)},"task":${JSON.stringify(arn)}}`;
    const res = await signedPost(crafted, { operation: 'StopTask' });
    expect(res.status).toBe(200);
    expect(ecsCalls).toHaveLength(1);
    const [call] = ecsCalls;
    expectSignedUpstream(call, 'StopTask');
    expect(call?.raw).toBe(JSON.stringify({ cluster: CONFIG.rules.cluster, task: arn }));
    expect(call?.raw.match(/"cluster"/g)).toHaveLength(1);

    // The other way round the value the broker would check (the last) is the wrong one: refused.
    ecsCalls.length = 0;
    const reversed = `{"cluster":${JSON.stringify(CONFIG.rules.cluster)},"cluster":"someone-elses","task":${JSON.stringify(arn)}}`;
    const refused = await signedPost(reversed, { operation: 'StopTask' });
    expect(refused).toMatchObject({ status: 403, type: 'AccessDeniedException' });
    expect(refused.body).toContain('refused cluster:');
    expect(ecsCalls).toEqual([]);
  });

  // The SDK sends the body's hash in a signed x-amz-content-sha256 header: a verifier that took the
  // hash from there without comparing it with the body (protocol/src/sigv4.ts did) would let a
  // captured request carry another body that passes the rules while its signature is valid.
  it('a body swapped under a signed request (signed payload hash of another body) is refused', async () => {
    const signedFor = JSON.stringify({ cluster: CONFIG.rules.cluster, tasks: [taskArn(CONFIG.rules, 'a'.repeat(32))] });
    const swapped = JSON.stringify({ cluster: CONFIG.rules.cluster, task: taskArn(CONFIG.rules, 'b'.repeat(32)) });
    const url = new URL(brokerUrl);
    const headers: Record<string, string> = {
      host: url.host,
      'content-type': JSON_11,
      'x-amz-target': `${TARGET}StopTask`,
      'x-amz-content-sha256': createHash('sha256').update(signedFor).digest('hex'),
    };
    const signed = await signSigV4({ method: 'POST', target: '/', headers, body: signedFor }, EDGE_KEY, {
      region: REGION,
      service: 'ecs',
    });
    const { host: _host, ...sent } = headers;
    const res = await fetch(url, { method: 'POST', headers: { ...sent, ...signed }, body: swapped });
    await res.body?.cancel();
    expect(ecsCalls).toEqual([]);
    expect(res.status).toBe(403);
  });

  it('the log says what was decided, never a body or a header’s value', async () => {
    const client = edgeClient();
    await client.send(new RunTaskCommand(sessionRunTask(CONFIG.rules)));
    await sdkError(
      client.send(
        new RunTaskCommand(
          withEnv(sessionRunTask(CONFIG.rules), (env) => [
            ...env,
            { name: 'SWITCHYARD_RUNNER_TOKEN', value: RUNNER_TOKEN },
          ]),
        ),
      ),
    );
    await sdkError(
      edgeClient({ credentials: { ...EDGE_KEY, secretAccessKey: RUNNER_TOKEN } }).send(
        new RunTaskCommand(sessionRunTask(CONFIG.rules)),
      ),
    );
    expect(logLines).toEqual([
      'RunTask → 200',
      'refused: RunTask overrides.containerOverrides.0.environment.10.name',
      'refused: InvalidSignatureException',
    ]);
    // afterEach: no token, no key in these lines or in the answers.
  });
});

describe('the ceiling on running runner tasks', () => {
  const atCap = (cap: number) => {
    current.config = { ...CONFIG, maxRunningTasks: cap };
  };

  it('before each RunTask the broker counts the cluster’s tasks desired RUNNING, signed upstream; a StopTask frees a place', async () => {
    atCap(2);
    const client = edgeClient();
    for (let i = 0; i < 2; i += 1) await client.send(new RunTaskCommand(sessionRunTask(CONFIG.rules)));
    expect(listCalls).toHaveLength(2);
    for (const call of listCalls) {
      expectSignedUpstream(call, 'ListTasks');
      expect(JSON.parse(call.raw)).toEqual({
        cluster: CONFIG.rules.cluster,
        desiredStatus: 'RUNNING',
        maxResults: 100,
      });
    }

    const err = await sdkError(client.send(new RunTaskCommand(pooledRunTask(CONFIG.rules))));
    expect(err).toMatchObject({ name: 'AccessDeniedException', status: 403 });
    expect(err.message).toContain('ceiling of 2 running runner tasks is reached (maxRunners)');
    expect(ecsCalls.filter((c) => c.headers['x-amz-target'] === `${TARGET}RunTask`)).toHaveLength(2);
    expect(logLines.at(-1)).toBe('refused: RunTask at the ceiling of 2 running tasks');

    await client.send(new StopTaskCommand({ cluster: CONFIG.rules.cluster, task: running[0] ?? '' }));
    await client.send(new RunTaskCommand(pooledRunTask(CONFIG.rules)));
    expect(running).toHaveLength(2);
  });

  it('counts across pages, and stops asking once the count reaches the ceiling', async () => {
    running.push(...Array.from({ length: 250 }, (_, i) => taskArn(CONFIG.rules, i.toString(16).padStart(32, '0'))));
    atCap(251);
    await edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules)));
    expect(listCalls.map((c) => (JSON.parse(c.raw) as { nextToken?: string }).nextToken !== undefined)).toEqual([
      false,
      true,
      true,
    ]);

    listCalls.length = 0;
    atCap(150);
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules))));
    expect(err).toMatchObject({ name: 'AccessDeniedException', status: 403 });
    expect(listCalls).toHaveLength(2);
  });

  it('a count that fails refuses the RunTask (503), and ECS never gets it', async () => {
    listReply = () =>
      json(
        400,
        { __type: 'AccessDeniedException', message: 'no ecs:ListTasks' },
        {
          'x-amzn-errortype': 'AccessDeniedException',
        },
      );
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(CONFIG.rules))));
    expect(err).toMatchObject({ name: 'ServiceUnavailableException', status: 503 });
    expect(err.message).toContain('could not count the running runner tasks');
    expect(ecsCalls).toEqual([]);
    expect(logLines).toEqual([
      'refused: RunTask, the running tasks could not be counted (ListTasks → 400 AccessDeniedException)',
    ]);
  });
});
