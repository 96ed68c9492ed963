// The Lambda adapter (function URL, payload 2.0): the real ECS SDK → a loopback server that turns
// each request into a function URL event for `handler` → the broker → a loopback ECS. lambda.ts
// reads the broker key from the regional Secrets Manager endpoint with no way to point it
// elsewhere, so the test redirects just that host (global fetch) to a loopback Secrets Manager,
// which verifies the signature with the role's credentials as sent (its original host).
import { createServer, type Server } from 'node:http';
import { DescribeTasksCommand, ECSClient, RunTaskCommand } from '@aws-sdk/client-ecs';
import { verifySigV4 } from '@switchyard/protocol';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FunctionUrlEvent, FunctionUrlResult } from '../src/lambda.ts';
import { HUB_ORIGIN, REGION, RULES, RUNNER_TOKEN, sdkError, sessionRunTask, taskArn } from './fixtures.ts';
import { close, headersOf, listen, readAll } from './loopback.ts';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:switchyard/broker-key-AbCdEf';
const BROKER_KEY = 'broker-key-for-lambda-test-0123456789abcdef';
const EDGE_KEY = { accessKeyId: 'SWITCHYARDBROKERKEY', secretAccessKey: BROKER_KEY };
/** The Lambda role's credentials, as the runtime puts them in the environment. */
const ROLE = {
  accessKeyId: 'ASIALAMBDAROLE',
  secretAccessKey: 'lambda-role-secret-key',
  sessionToken: 'lambda-role-token',
};
const SECRETS_HOST = `secretsmanager.${REGION}.amazonaws.com`;
const ROTATED_KEY = 'broker-key-after-rotation-fedcba9876543210';
const SECRETS = [BROKER_KEY, ROTATED_KEY, ROLE.secretAccessKey, ROLE.sessionToken, RUNNER_TOKEN];

type Verified = Awaited<ReturnType<typeof verifySigV4>>;
interface Call {
  headers: Record<string, string>;
  raw: string;
  auth: Verified;
}

/** A loopback AWS service: verifies the role's signature for `service`, records, answers. */
function fakeService(service: string, calls: Call[], answer: (call: Call) => { status: number; body: string }): Server {
  return createServer((req, res) => {
    void (async () => {
      const raw = await readAll(req);
      const headers = headersOf(req);
      // The redirected Secrets Manager request was signed for its real host.
      const original = headers['x-original-host'];
      const signedHeaders = original === undefined ? headers : { ...headers, host: original };
      const auth = await verifySigV4(
        { method: req.method ?? '', target: req.url ?? '', headers: signedHeaders, body: new Uint8Array(raw) },
        ROLE,
        { service },
      );
      const call = { headers, raw: raw.toString('utf8'), auth };
      calls.push(call);
      const a = auth.ok ? answer(call) : { status: 403, body: JSON.stringify({ __type: auth.type }) };
      res.writeHead(a.status, { 'content-type': 'application/x-amz-json-1.1' }).end(a.body);
    })();
  });
}

const secretCalls: Call[] = [];
const ecsCalls: Call[] = [];
/** Answers a GetSecretValue for a version stage. */
let secretAnswer: (stage: string) => { status: number; body: string };
const secretsServer = fakeService('secretsmanager', secretCalls, (call) =>
  secretAnswer((JSON.parse(call.raw) as { VersionStage: string }).VersionStage),
);
/** What the edge's requests became at ECS, without the broker's own counting (ListTasks). */
const forwarded = () => ecsCalls.filter((c) => !c.headers['x-amz-target']?.endsWith('.ListTasks'));
const ecsServer = fakeService('ecs', ecsCalls, (call) => {
  const body = JSON.parse(call.raw) as { tasks?: string[] };
  if (call.headers['x-amz-target']?.endsWith('.ListTasks'))
    return { status: 200, body: JSON.stringify({ taskArns: [] }) };
  return call.headers['x-amz-target']?.endsWith('.RunTask')
    ? {
        status: 200,
        body: JSON.stringify({ tasks: [{ taskArn: taskArn(RULES, `${ecsCalls.length}`.padStart(32, '0')) }] }),
      }
    : { status: 200, body: JSON.stringify({ tasks: (body.tasks ?? []).map((t) => ({ taskArn: t })), failures: [] }) };
});

/** The function URL: each request becomes an event for the freshly imported handler. */
let handler: (event: FunctionUrlEvent) => Promise<FunctionUrlResult>;
let base64Bodies = false;
const events: FunctionUrlEvent[] = [];
const functionUrl = createServer((req, res) => {
  void (async () => {
    const raw = await readAll(req);
    const headers: Record<string, string> = {};
    // Mixed case, which the adapter must lower-case for the signature check.
    for (const [k, v] of Object.entries(headersOf(req))) headers[k.replace(/(^|-)[a-z]/g, (m) => m.toUpperCase())] = v;
    const [rawPath = '/', rawQueryString = ''] = (req.url ?? '/').split('?');
    const event: FunctionUrlEvent = {
      rawPath,
      rawQueryString,
      headers,
      body: raw.toString(base64Bodies ? 'base64' : 'utf8'),
      isBase64Encoded: base64Bodies,
      requestContext: { http: { method: req.method ?? '', sourceIp: req.socket.remoteAddress ?? '' } },
    };
    events.push(event);
    const r = await handler(event);
    // The SDK corrects its clock by a response's Date; Node's own would be the real time, not the test's.
    res.writeHead(r.statusCode, { ...r.headers, date: new Date().toUTCString() }).end(r.body);
  })();
});

const realFetch = globalThis.fetch;
let secretsUrl = '';
let ecsUrl = '';
let functionUrlBase = '';

/** Only the Secrets Manager host is redirected (to loopback); anything else but loopback fails. */
const redirectingFetch: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === SECRETS_HOST) {
    const headers = new Headers(init?.headers);
    headers.set('x-original-host', url.host);
    return realFetch(new URL(url.pathname, secretsUrl), { ...init, headers });
  }
  if (url.hostname !== '127.0.0.1') return Promise.reject(new Error(`the test has no network: ${url.host}`));
  return realFetch(input, init);
};

const ENV_NAMES = [
  'ECS_CLUSTER',
  'ECS_TASK_DEFINITION',
  'ECS_SUBNETS',
  'ECS_SECURITY_GROUPS',
  'AWS_REGION',
  'HUB_ORIGIN',
  'BROKER_KEY_ID',
  'ECS_ENDPOINT',
  'BROKER_KEY_SECRET_ARN',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;
const saved: Record<string, string | undefined> = {};

function lambdaEnv(): Record<(typeof ENV_NAMES)[number], string> {
  return {
    ECS_CLUSTER: RULES.cluster,
    ECS_TASK_DEFINITION: RULES.taskDefinition,
    ECS_SUBNETS: RULES.subnets.join(','),
    ECS_SECURITY_GROUPS: RULES.securityGroups.join(','),
    AWS_REGION: REGION,
    HUB_ORIGIN,
    BROKER_KEY_ID: EDGE_KEY.accessKeyId,
    ECS_ENDPOINT: ecsUrl,
    BROKER_KEY_SECRET_ARN: SECRET_ARN,
    AWS_ACCESS_KEY_ID: ROLE.accessKeyId,
    AWS_SECRET_ACCESS_KEY: ROLE.secretAccessKey,
    AWS_SESSION_TOKEN: ROLE.sessionToken,
  };
}

/** Sets the environment (undefined: unset), then imports lambda.ts afresh: its caches start empty. */
async function freshHandler(env: Partial<Record<(typeof ENV_NAMES)[number], string | undefined>>): Promise<void> {
  for (const name of ENV_NAMES) {
    const v = env[name];
    if (v === undefined) delete process.env[name];
    else process.env[name] = v;
  }
  vi.resetModules();
  handler = (await import('../src/lambda.ts')).handler;
}

let logged: string[] = [];
const clients: ECSClient[] = [];
function edgeClient(credentials = EDGE_KEY): ECSClient {
  const c = new ECSClient({ region: REGION, endpoint: functionUrlBase, credentials, maxAttempts: 1 });
  clients.push(c);
  return c;
}

const KEY_MADE = Date.UTC(2026, 10, 1) / 1000;
const secretVersion = (value: string, createdAt: number) => ({
  status: 200,
  body: JSON.stringify({ ARN: SECRET_ARN, SecretString: value, CreatedDate: createdAt }),
});
const noVersion = {
  status: 400,
  body: JSON.stringify({ __type: 'ResourceNotFoundException', message: 'no version in that stage' }),
};
/** A secret never rotated: a current version only. */
const okSecret = (stage: string) => (stage === 'AWSCURRENT' ? secretVersion(BROKER_KEY, KEY_MADE) : noVersion);

beforeAll(async () => {
  secretsUrl = await listen(secretsServer);
  ecsUrl = await listen(ecsServer);
  functionUrlBase = await listen(functionUrl);
  for (const name of ENV_NAMES) saved[name] = process.env[name];
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  for (const name of ENV_NAMES) {
    const v = saved[name];
    if (v === undefined) delete process.env[name];
    else process.env[name] = v;
  }
  await Promise.all([close(secretsServer), close(ecsServer), close(functionUrl)]);
});
beforeEach(() => {
  secretCalls.length = 0;
  ecsCalls.length = 0;
  events.length = 0;
  base64Bodies = false;
  secretAnswer = okSecret;
  logged = [];
  vi.stubGlobal('fetch', redirectingFetch);
  const capture = (...args: unknown[]) => void logged.push(args.map(String).join(' '));
  vi.spyOn(console, 'log').mockImplementation(capture);
  vi.spyOn(console, 'error').mockImplementation(capture);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  const seen = logged.join('\n');
  for (const secret of SECRETS) expect(seen).not.toContain(secret);
});

describe('the Lambda handler behind its function URL', () => {
  it.each([false, true])(
    'checks and forwards the SDK’s requests (base64 body: %s); the broker key is read once, with the role',
    async (base64) => {
      base64Bodies = base64;
      await freshHandler(lambdaEnv());
      const client = edgeClient();
      const out = await client.send(new RunTaskCommand(sessionRunTask(RULES)));
      const arn = out.tasks?.[0]?.taskArn ?? '';
      const described = await client.send(new DescribeTasksCommand({ cluster: RULES.cluster, tasks: [arn] }));
      expect(described.tasks?.map((t) => t.taskArn)).toEqual([arn]);
      expect(events.map((e) => e.isBase64Encoded)).toEqual([base64, base64]);

      // One read of each version for both requests, signed with the role's credentials and token.
      expect(secretCalls.map((c) => c.raw).sort()).toEqual([
        JSON.stringify({ SecretId: SECRET_ARN, VersionStage: 'AWSCURRENT' }),
        JSON.stringify({ SecretId: SECRET_ARN, VersionStage: 'AWSPREVIOUS' }),
      ]);
      for (const c of secretCalls) {
        expect(c.auth).toEqual({ ok: true, accessKeyId: ROLE.accessKeyId, region: REGION, service: 'secretsmanager' });
        expect(c.headers['x-amz-security-token']).toBe(ROLE.sessionToken);
      }

      // ECS got both, as checked, and the count of running tasks before the RunTask, signed with
      // the role (never the broker key).
      expect(ecsCalls.map((c) => c.headers['x-amz-target'])).toEqual([
        'AmazonEC2ContainerServiceV20141113.ListTasks',
        'AmazonEC2ContainerServiceV20141113.RunTask',
        'AmazonEC2ContainerServiceV20141113.DescribeTasks',
      ]);
      for (const c of ecsCalls) {
        expect(c.auth).toEqual({ ok: true, accessKeyId: ROLE.accessKeyId, region: REGION, service: 'ecs' });
        expect(c.headers['x-amz-security-token']).toBe(ROLE.sessionToken);
      }
      expect(JSON.parse(ecsCalls[1]?.raw ?? '')).toEqual(sessionRunTask(RULES));
      // Each line names who called: the function URL's source address.
      expect(logged).toEqual(['RunTask → 200 (from 127.0.0.1)', 'DescribeTasks → 200 (from 127.0.0.1)']);
    },
  );

  it('a refusal comes back as the broker answered it; ECS gets nothing', async () => {
    await freshHandler(lambdaEnv());
    const input = sessionRunTask(RULES);
    const err = await sdkError(
      edgeClient().send(
        new RunTaskCommand({
          ...input,
          overrides: { containerOverrides: [{ ...input.overrides.containerOverrides[0]!, command: ['sh'] }] },
        }),
      ),
    );
    expect(err).toMatchObject({ name: 'AccessDeniedException', status: 403 });
    expect(err.message).toContain('refused overrides.containerOverrides.0.command');
    expect(ecsCalls).toEqual([]);
  });

  it('a query string is part of the target: no route', async () => {
    await freshHandler(lambdaEnv());
    const r = await handler({
      rawPath: '/',
      rawQueryString: 'Action=RunTask',
      headers: {},
      body: '',
      requestContext: { http: { method: 'POST' } },
    });
    expect(r.statusCode).toBe(404);
    expect(JSON.parse(r.body)).toMatchObject({ __type: 'UnknownOperationException' });
  });

  it('missing configuration: 500 ServerException, the log names the variables, nothing echoes a value', async () => {
    await freshHandler({ ...lambdaEnv(), ECS_SUBNETS: undefined, HUB_ORIGIN: 'https://edge.example/leaky-path-zz' });
    const r = await handler({ rawPath: '/', headers: {}, body: '{}', requestContext: { http: { method: 'POST' } } });
    expect(r.statusCode).toBe(500);
    expect(JSON.parse(r.body)).toEqual({
      __type: 'ServerException',
      message: 'the launch broker is not configured; its log names what is missing',
    });
    const log = logged.join('\n');
    expect(log).toContain('ECS_SUBNETS');
    expect(log).toContain('HUB_ORIGIN');
    expect(`${log}\n${r.body}`).not.toContain('leaky-path-zz');
    expect(secretCalls).toEqual([]);
  });

  it('the broker key cannot be read: 500; the next request reads it again', async () => {
    secretAnswer = () => ({
      status: 400,
      body: JSON.stringify({ __type: 'ResourceNotFoundException', message: `no secret ${SECRET_ARN}` }),
    });
    await freshHandler(lambdaEnv());
    const client = edgeClient();
    const err = await sdkError(client.send(new RunTaskCommand(sessionRunTask(RULES))));
    expect(err).toMatchObject({ name: 'ServerException', status: 500 });
    expect(err.message).toBe('the launch broker failed; its log says why');
    expect(logged.join('\n')).toContain('the broker key secret has no AWSCURRENT version');
    expect(ecsCalls).toEqual([]);

    secretAnswer = okSecret;
    await client.send(new RunTaskCommand(sessionRunTask(RULES)));
    expect(secretCalls).toHaveLength(4);
    expect(forwarded()).toHaveLength(1);
  });

  it('a rotation: the new key passes once warm instances re-read the secret, the old one for an hour after it was made', async () => {
    const T0 = Date.UTC(2026, 11, 7, 10, 0, 0);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    await freshHandler(lambdaEnv());
    const before = edgeClient();
    const after = edgeClient({ ...EDGE_KEY, secretAccessKey: ROTATED_KEY });
    const launch = (c: ECSClient) => c.send(new RunTaskCommand(sessionRunTask(RULES)));
    await launch(before);
    expect(secretCalls).toHaveLength(2);

    // The operator puts a new value: it becomes AWSCURRENT and the old one AWSPREVIOUS.
    vi.setSystemTime(T0 + 60_000);
    const rotatedAt = (T0 + 60_000) / 1000;
    secretAnswer = (stage) =>
      stage === 'AWSCURRENT' ? secretVersion(ROTATED_KEY, rotatedAt) : secretVersion(BROKER_KEY, KEY_MADE);
    await launch(before);
    // This instance read the secret a minute ago and trusts that read for five: the Worker is
    // switched to the new key only after that (README "Deploying", step 6).
    expect(await sdkError(launch(after))).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    expect(secretCalls).toHaveLength(2);

    vi.setSystemTime(T0 + 5 * 60_000);
    await launch(after);
    await launch(before);
    expect(secretCalls).toHaveLength(4);
    expect(logged.slice(-3)).toEqual([
      'RunTask → 200 (from 127.0.0.1)',
      'signed with the previous broker key (from 127.0.0.1)',
      'RunTask → 200 (from 127.0.0.1)',
    ]);

    // An hour after the rotation the old key (a leaked one, say) is refused; the new one passes.
    vi.setSystemTime(T0 + 60_000 + 60 * 60_000);
    expect(await sdkError(launch(before))).toMatchObject({ name: 'InvalidSignatureException', status: 403 });
    await launch(after);
    expect(forwarded()).toHaveLength(5);
  });

  it.each<[string, Partial<Record<(typeof ENV_NAMES)[number], undefined>>, string]>([
    ['no BROKER_KEY_SECRET_ARN', { BROKER_KEY_SECRET_ARN: undefined }, 'BROKER_KEY_SECRET_ARN is not set'],
    ['no role credentials', { AWS_ACCESS_KEY_ID: undefined }, 'the Lambda runtime gave no credentials'],
  ])('%s: 500 ServerException, the log says why', async (_name, unset, why) => {
    await freshHandler({ ...lambdaEnv(), ...unset });
    const err = await sdkError(edgeClient().send(new RunTaskCommand(sessionRunTask(RULES))));
    expect(err).toMatchObject({ name: 'ServerException', status: 500 });
    expect(logged).toEqual([`launch broker: ${why}`]);
    expect(ecsCalls).toEqual([]);
  });
});
