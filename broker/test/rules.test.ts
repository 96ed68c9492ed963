// checkRequest: the broker lets through exactly the bodies the edge's ECS launcher sends for this
// deployment, and refuses every way of making a task do something else, naming the field.
import { describe, expect, it } from 'vitest';
import { type BrokerRules, checkRequest, type Operation } from '../src/rules.ts';
import {
  envValue,
  HUB_ORIGIN,
  type KeyValue,
  LAUNCH_ID,
  pooledRunTask,
  probeRunTask,
  RULES,
  type RunTaskBody,
  sessionRunTask,
  setVar,
  STS_URL,
  taskArn,
  withContainer,
  withEnv,
} from './fixtures.ts';

const ENV = 'overrides.containerOverrides.0.environment';
const COMMAND = 'overrides.containerOverrides.0.command';
const VPC = 'networkConfiguration.awsvpcConfiguration';

/** The verdict, which must be a refusal: its field and message. */
function refusal(operation: Operation, body: unknown, rules: BrokerRules = RULES) {
  const v = checkRequest(operation, body, rules);
  if (v.ok) throw new Error(`expected a refusal, the body was accepted: ${JSON.stringify(body).slice(0, 300)}`);
  return { field: v.field, message: v.message };
}

/** The verdict, which must accept: the body it would forward. */
function accepted(operation: Operation, body: unknown, rules: BrokerRules = RULES): unknown {
  const v = checkRequest(operation, body, rules);
  if (!v.ok) throw new Error(`expected the body to pass, refused ${v.field}: ${v.message}`);
  return v.body;
}

const vpc = (b: RunTaskBody, over: object) => ({
  ...b,
  networkConfiguration: { awsvpcConfiguration: { ...b.networkConfiguration.awsvpcConfiguration, ...over } },
});
const setEnv = (b: RunTaskBody, name: string, value: string | undefined) =>
  withEnv(b, (env) => setVar(env, name, value));

const LOCAL: BrokerRules = {
  ...RULES,
  hubOrigins: ['http://127.0.0.1:8787'],
  identity: null,
  allowLoopbackRepositories: true,
};

describe('accepted: what the edge sends, forwarded as checked', () => {
  const NO_IDENTITY: BrokerRules = { ...RULES, identity: null };
  it.each<[string, BrokerRules, (rules: BrokerRules) => RunTaskBody]>([
    ['a session launch', RULES, (r) => sessionRunTask(r)],
    [
      'a session launch of claude with the CLI default model',
      RULES,
      (r) => sessionRunTask(r, { backend: 'claude', model: null }),
    ],
    ['a fresh session launch started ahead', RULES, (r) => sessionRunTask(r, { fresh: true, warmUp: true })],
    ['a pooled launch', RULES, (r) => pooledRunTask(r)],
    ['a pooled launch of pi', RULES, (r) => pooledRunTask(r, { backend: 'pi' })],
    ['a probe of pi', RULES, (r) => probeRunTask(r, 'pi')],
    ['a probe of claude', RULES, (r) => probeRunTask(r, 'claude')],
    ['a session launch without identity where none is asked', NO_IDENTITY, (r) => sessionRunTask(r)],
    ['a pooled launch without identity where none is asked', NO_IDENTITY, (r) => pooledRunTask(r)],
    [
      'a session launch on the local stack (http edge, loopback clones)',
      LOCAL,
      (r) => sessionRunTask(r, { repositoryAllowLoopback: true }),
    ],
    [
      'a pooled launch on the local stack (loopback clones)',
      LOCAL,
      (r) => pooledRunTask(r, { repositoryAllowLoopback: true }),
    ],
  ])('%s', (_name, rules, make) => {
    const body = make(rules);
    const out = accepted('RunTask', body, rules);
    // The body forwarded is what came in: no field dropped, added or changed.
    expect(out).toEqual(body);
    expect(JSON.parse(JSON.stringify(out))).toEqual(body);
  });

  it('sanity: the fixtures are what the edge pins (edge/test/launcher.test.ts)', () => {
    const s = sessionRunTask();
    expect(envValue(s, 'SWITCHYARD_HUB_URL')).toBe('wss://edge.switchyard.example/internal/runner/connect');
    expect(envValue(s, 'SWITCHYARD_IDENTITY_URL')).toBe(STS_URL);
    expect(s.clientToken).toBe(LAUNCH_ID);
    expect(envValue(pooledRunTask(), 'SWITCHYARD_POOL_URL')).toBe('wss://edge.switchyard.example/internal/runner/pool');
    expect(probeRunTask().overrides.containerOverrides).toEqual([
      { name: 'runner', command: ['probe', '--backend', 'pi'] },
    ]);
  });

  it('a launch on any of several configured edge origins', () => {
    const rules: BrokerRules = { ...RULES, hubOrigins: ['https://other.example', HUB_ORIGIN] };
    expect(accepted('RunTask', sessionRunTask(rules), rules)).toEqual(sessionRunTask(rules));
  });

  it('subnets and security groups in another order than configured', () => {
    const body = vpc(sessionRunTask(), { subnets: [...RULES.subnets].reverse() });
    expect(accepted('RunTask', body)).toEqual(body);
  });

  // RunTask's clientToken is an idempotency token, which the AWS SDK fills in with a UUID when the
  // input has none, so a probe always arrives with one (broker.test.ts shows it with the real SDK).
  it('a probe with the client token the SDK fills in (a UUID)', () => {
    const body = { ...probeRunTask(), clientToken: '3f2b8c1e-5d4a-4e6f-9a7b-0c1d2e3f4a5b' };
    expect(accepted('RunTask', body)).toEqual(body);
  });

  it('StopTask and DescribeTasks of the cluster', () => {
    const arn = taskArn(RULES, '0123456789abcdef0123456789abcdef');
    const stop = { cluster: RULES.cluster, task: arn, reason: 'idle for 15 minutes' };
    expect(accepted('StopTask', stop)).toEqual(stop);
    const describe = { cluster: RULES.cluster, tasks: [arn] };
    expect(accepted('DescribeTasks', describe)).toEqual(describe);
    const hundred = { cluster: RULES.cluster, tasks: Array.from({ length: 100 }, (_, i) => taskArn(RULES, `t${i}`)) };
    expect(accepted('DescribeTasks', hundred)).toEqual(hundred);
  });

  it('SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK where the deployment allows it', () => {
    const rules = { ...RULES, allowLoopbackRepositories: true };
    const body = sessionRunTask(rules, { repositoryAllowLoopback: true });
    expect(envValue(body, 'SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK')).toBe('1');
    expect(accepted('RunTask', body, rules)).toEqual(body);
  });
});

describe('refused: the launch itself', () => {
  it.each<[string, () => unknown, string, string]>([
    [
      'a command override on a session launch',
      () => withContainer(sessionRunTask(), (c) => ({ ...c, command: ['sh', '-c', 'env'] })),
      COMMAND,
      'own command',
    ],
    [
      'a command override on a pooled launch',
      () => withContainer(pooledRunTask(), (c) => ({ ...c, command: ['serve'] })),
      COMMAND,
      'own command',
    ],
    [
      'a probe running a shell',
      () => withContainer(probeRunTask(), (c) => ({ ...c, command: ['sh', '-c', 'env'] })),
      COMMAND,
      'probe --backend',
    ],
    [
      'a probe with an extra argument',
      () => withContainer(probeRunTask(), (c) => ({ ...c, command: ['probe', '--backend', 'pi', '--json'] })),
      COMMAND,
      'probe --backend',
    ],
    [
      'another program with the probe’s arguments',
      () => withContainer(probeRunTask(), (c) => ({ ...c, command: ['serve', '--backend', 'pi'] })),
      COMMAND,
      'probe --backend',
    ],
    [
      'a probe with another flag',
      () => withContainer(probeRunTask(), (c) => ({ ...c, command: ['probe', '--config', 'pi'] })),
      COMMAND,
      'probe --backend',
    ],
    [
      'a probe of an unknown backend',
      () => withContainer(probeRunTask(), (c) => ({ ...c, command: ['probe', '--backend', 'bash'] })),
      COMMAND,
      'probe --backend',
    ],
    [
      'a probe without a command',
      () => withContainer(probeRunTask(), (c) => ({ name: c.name })),
      COMMAND,
      'probe --backend',
    ],
    [
      'a probe with an environment',
      () =>
        withContainer(probeRunTask(), (c) => ({
          ...c,
          environment: [{ name: 'NODE_OPTIONS', value: '--require=/tmp/x.js' }],
        })),
      ENV,
      'no environment',
    ],
    [
      'a probe tagged as another backend',
      () => ({ ...probeRunTask(RULES, 'pi'), tags: [{ key: 'switchyard:probe', value: 'claude' }] }),
      'tags',
      'own tags',
    ],
    [
      'a probe under a session launch’s startedBy',
      () => ({ ...probeRunTask(), startedBy: 'switchyard' }),
      COMMAND,
      'own command',
    ],
  ])('%s', (_name, make, field, message) => {
    const r = refusal('RunTask', make());
    expect(r.field).toBe(field);
    expect(r.message).toContain(message);
  });

  it.each(['SWITCHYARD_MODEL_URL', 'NODE_OPTIONS', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'HTTPS_PROXY'])(
    'an environment name a launch does not set: %s',
    (name) => {
      for (const body of [sessionRunTask(), pooledRunTask()]) {
        const r = refusal('RunTask', setEnv(body, name, 'http://attacker.example/'));
        expect(r.field).toBe(`${ENV}.${name}`);
        expect(r.message).toContain(name);
      }
    },
  );

  it('a pool-only name on a session launch', () => {
    const r = refusal('RunTask', setEnv(sessionRunTask(), 'SWITCHYARD_POOL_TOKEN', 'x'));
    expect(r).toEqual({
      field: `${ENV}.SWITCHYARD_POOL_TOKEN`,
      message: expect.stringContaining('SWITCHYARD_POOL_TOKEN'),
    });
  });

  it.each(['SWITCHYARD_HUB_URL', 'SWITCHYARD_RUNNER_TOKEN', 'SWITCHYARD_IDENTITY_URL'])(
    'an environment name given twice (%s): ECS would pick one',
    (name) => {
      const body = withEnv(sessionRunTask(), (env) => {
        const first = env.find((kv) => kv.name === name);
        return [...env, { name, value: `${first?.value ?? ''}-second` }];
      });
      const index = (body.overrides.containerOverrides[0]?.environment?.length ?? 0) - 1;
      const r = refusal('RunTask', body);
      expect(r.field).toBe(`${ENV}.${index}.name`);
      expect(r.message).toBe(`${name} is given twice`);
    },
  );

  it.each([
    ['on another origin', 'wss://attacker.example/internal/runner/connect'],
    ['on another port of the edge host', 'wss://edge.switchyard.example:8443/internal/runner/connect'],
    ['on a subdomain of the edge', 'wss://evil.edge.switchyard.example/internal/runner/connect'],
    ['with a query', 'wss://edge.switchyard.example/internal/runner/connect?via=attacker.example'],
    ['with a fragment', 'wss://edge.switchyard.example/internal/runner/connect#x'],
    ['with credentials in it', 'wss://user:pw@edge.switchyard.example/internal/runner/connect'],
    ['with another path', 'wss://edge.switchyard.example/internal/runner/pool'],
    ['with https: instead of wss:', 'https://edge.switchyard.example/internal/runner/connect'],
    ['with ws: to an https edge (no TLS)', 'ws://edge.switchyard.example/internal/runner/connect'],
    ['not a URL', 'edge.switchyard.example/internal/runner/connect'],
  ])('a hub URL %s', (_name, url) => {
    const r = refusal('RunTask', setEnv(sessionRunTask(), 'SWITCHYARD_HUB_URL', url));
    expect(r.field).toBe(`${ENV}.SWITCHYARD_HUB_URL`);
    expect(r.message).toContain(`runners dial only ${HUB_ORIGIN}`);
  });

  it('a hub URL with http: instead of ws: on the local stack', () => {
    const body = setEnv(sessionRunTask(LOCAL), 'SWITCHYARD_HUB_URL', 'http://127.0.0.1:8787/internal/runner/connect');
    const r = refusal('RunTask', body, LOCAL);
    expect(r.field).toBe(`${ENV}.SWITCHYARD_HUB_URL`);
    expect(r.message).toContain('http://127.0.0.1:8787');
  });

  it.each([
    ['on another origin', 'wss://attacker.example/internal/runner/pool'],
    ['on the hub path', 'wss://edge.switchyard.example/internal/runner/connect'],
    ['with a query', 'wss://edge.switchyard.example/internal/runner/pool?x=1'],
  ])('a pool URL %s', (_name, url) => {
    const r = refusal('RunTask', setEnv(pooledRunTask(), 'SWITCHYARD_POOL_URL', url));
    expect(r.field).toBe(`${ENV}.SWITCHYARD_POOL_URL`);
    expect(r.message).toContain(`runners dial only ${HUB_ORIGIN}`);
  });

  describe('identity', () => {
    const IDENTITY = `${ENV}.SWITCHYARD_IDENTITY_URL`;
    it.each<[string, (env: KeyValue[]) => KeyValue[]]>([
      ['an identity URL elsewhere', (env) => setVar(env, 'SWITCHYARD_IDENTITY_URL', 'https://sts.attacker.example/')],
      ['another region’s STS', (env) => setVar(env, 'SWITCHYARD_IDENTITY_URL', 'https://sts.us-east-1.amazonaws.com/')],
      ['the right URL with another signing region', (env) => setVar(env, 'SWITCHYARD_IDENTITY_REGION', 'us-east-1')],
      [
        'no identity where the deployment requires one',
        (env) => setVar(setVar(env, 'SWITCHYARD_IDENTITY_URL', undefined), 'SWITCHYARD_IDENTITY_REGION', undefined),
      ],
    ])('%s', (_name, f) => {
      for (const body of [sessionRunTask(), pooledRunTask()]) {
        const r = refusal('RunTask', withEnv(body, f));
        expect(r.field).toBe(IDENTITY);
        expect(r.message).toContain(`at ${STS_URL} only`);
      }
    });

    it('an identity URL where the deployment asks for none', () => {
      const rules = { ...RULES, identity: null };
      for (const body of [sessionRunTask(RULES), pooledRunTask(RULES)]) {
        const r = refusal('RunTask', body, rules);
        expect(r.field).toBe(IDENTITY);
        expect(r.message).toBe('runners prove no identity here');
      }
    });
  });

  it('SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK where the deployment does not allow it', () => {
    for (const body of [
      sessionRunTask(RULES, { repositoryAllowLoopback: true }),
      pooledRunTask(RULES, { repositoryAllowLoopback: true }),
    ]) {
      const r = refusal('RunTask', body);
      expect(r.field).toBe(`${ENV}.SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK`);
      expect(r.message).toBe('not allowed in this deployment');
    }
  });

  it.each<[string, (b: RunTaskBody) => unknown, string, string]>([
    ['another cluster', (b) => ({ ...b, cluster: 'someone-elses' }), 'cluster', RULES.cluster],
    [
      'another task definition',
      (b) => ({ ...b, taskDefinition: 'arn:aws:ecs:eu-central-1:123456789012:task-definition/admin:1' }),
      'taskDefinition',
      RULES.taskDefinition,
    ],
    [
      'another container',
      (b) => withContainer(b, (c) => ({ ...c, name: 'sidecar' })),
      'overrides.containerOverrides.0.name',
      RULES.containerName,
    ],
    [
      'one subnet added',
      (b) => vpc(b, { subnets: [...RULES.subnets, 'subnet-public'] }),
      `${VPC}.subnets`,
      'configured subnets',
    ],
    ['one subnet left out', (b) => vpc(b, { subnets: RULES.subnets.slice(1) }), `${VPC}.subnets`, 'configured subnets'],
    [
      'a subnet given twice instead of another',
      (b) => vpc(b, { subnets: [RULES.subnets[0], RULES.subnets[0]] }),
      `${VPC}.subnets`,
      'configured subnets',
    ],
    [
      'another security group',
      (b) => vpc(b, { securityGroups: ['sg-open'] }),
      `${VPC}.securityGroups`,
      'configured security groups',
    ],
    [
      'a security group added',
      (b) => vpc(b, { securityGroups: [...RULES.securityGroups, 'sg-open'] }),
      `${VPC}.securityGroups`,
      'configured security groups',
    ],
    ['a public IP', (b) => vpc(b, { assignPublicIp: 'ENABLED' }), `${VPC}.assignPublicIp`, 'DISABLED'],
    ['launchType EC2', (b) => ({ ...b, launchType: 'EC2' }), 'launchType', 'FARGATE'],
    ['count 2', (b) => ({ ...b, count: 2 }), 'count', 'expected 1'],
    ['ECS Exec', (b) => ({ ...b, enableExecuteCommand: true }), 'enableExecuteCommand', 'false'],
    ['another startedBy', (b) => ({ ...b, startedBy: 'switchyard-admin' }), 'startedBy', 'switchyard'],
    [
      'two container overrides',
      (b) => ({
        ...b,
        overrides: { containerOverrides: [...b.overrides.containerOverrides, { name: 'sidecar', command: ['sh'] }] },
      }),
      'overrides.containerOverrides',
      'exactly 1',
    ],
    [
      'no container override',
      (b) => ({ ...b, overrides: { containerOverrides: [] } }),
      'overrides.containerOverrides',
      'exactly 1',
    ],
  ])('%s', (_name, mutate, field, message) => {
    // Whatever kind of launch: these are fixed by the deployment.
    for (const body of [sessionRunTask(), pooledRunTask(), probeRunTask()]) {
      const r = refusal('RunTask', mutate(body));
      expect(r.field).toBe(field);
      expect(r.message).toContain(message);
    }
  });

  it('an environment entry with a field besides name and value', () => {
    const body = withContainer(sessionRunTask(), (c) => ({
      ...c,
      environment: (c.environment ?? []).map((kv, i) => (i === 2 ? { ...kv, type: 'secret' } : kv)),
    }));
    expect(refusal('RunTask', body)).toEqual({ field: `${ENV}.2.type`, message: 'Unrecognized key: "type"' });
  });

  // An unknown key is named itself: the field is its path, the key last.
  it.each<[string, (b: RunTaskBody) => unknown, string, string]>([
    [
      'overrides.taskRoleArn',
      (b) => ({ ...b, overrides: { ...b.overrides, taskRoleArn: 'arn:aws:iam::1:role/admin' } }),
      'overrides',
      'taskRoleArn',
    ],
    [
      'overrides.executionRoleArn',
      (b) => ({ ...b, overrides: { ...b.overrides, executionRoleArn: 'arn:aws:iam::1:role/x' } }),
      'overrides',
      'executionRoleArn',
    ],
    ['overrides.cpu', (b) => ({ ...b, overrides: { ...b.overrides, cpu: '4096' } }), 'overrides', 'cpu'],
    [
      'overrides.ephemeralStorage',
      (b) => ({ ...b, overrides: { ...b.overrides, ephemeralStorage: { sizeInGiB: 200 } } }),
      'overrides',
      'ephemeralStorage',
    ],
    ['platformVersion', (b) => ({ ...b, platformVersion: '1.3.0' }), '', 'platformVersion'],
    ['propagateTags', (b) => ({ ...b, propagateTags: 'TASK_DEFINITION' }), '', 'propagateTags'],
    [
      'volumeConfigurations',
      (b) => ({ ...b, volumeConfigurations: [{ name: 'v', managedEBSVolume: {} }] }),
      '',
      'volumeConfigurations',
    ],
    [
      'capacityProviderStrategy',
      (b) => ({ ...b, capacityProviderStrategy: [{ capacityProvider: 'FARGATE_SPOT' }] }),
      '',
      'capacityProviderStrategy',
    ],
    ['networkConfiguration.awsvpcConfiguration.extra', (b) => vpc(b, { extra: 1 }), VPC, 'extra'],
    [
      'container environmentFiles',
      (b) =>
        withContainer(b, (c) => ({ ...c, environmentFiles: [{ value: 'arn:aws:s3:::bucket/x.env', type: 's3' }] })),
      'overrides.containerOverrides.0',
      'environmentFiles',
    ],
    ['container cpu', (b) => withContainer(b, (c) => ({ ...c, cpu: 4096 })), 'overrides.containerOverrides.0', 'cpu'],
    [
      'container memory',
      (b) => withContainer(b, (c) => ({ ...c, memory: 30720 })),
      'overrides.containerOverrides.0',
      'memory',
    ],
    [
      'container resourceRequirements',
      (b) => withContainer(b, (c) => ({ ...c, resourceRequirements: [{ type: 'GPU', value: '1' }] })),
      'overrides.containerOverrides.0',
      'resourceRequirements',
    ],
  ])('an extra field: %s', (_name, mutate, field, key) => {
    for (const body of [sessionRunTask(), pooledRunTask(), probeRunTask()]) {
      const r = refusal('RunTask', mutate(body));
      expect(r.field).toBe(field === '' ? key : `${field}.${key}`);
      expect(r.message).toBe(`Unrecognized key: "${key}"`);
    }
  });

  it.each<[string, (b: RunTaskBody) => unknown]>([
    ['an extra tag', (b) => ({ ...b, tags: [...b.tags, { key: 'owner', value: 'attacker' }] })],
    ['a tag left out', (b) => ({ ...b, tags: b.tags.slice(1) })],
    [
      'a tag of another session',
      (b) => ({
        ...b,
        tags: b.tags.map((t) => (t.key === 'switchyard:session' ? { ...t, value: 'ses_other' } : t)),
      }),
    ],
    [
      'a tag of another backend',
      (b) => ({
        ...b,
        tags: b.tags.map((t) => (t.key === 'switchyard:backend' ? { ...t, value: 'claude' } : t)),
      }),
    ],
    ['a tag given twice instead of another', (b) => ({ ...b, tags: [b.tags[0], b.tags[0], b.tags[2]] })],
    [
      'the pool’s tags',
      (b) => ({
        ...b,
        tags: [
          { key: 'switchyard:pool', value: LAUNCH_ID },
          { key: 'switchyard:backend', value: 'pi' },
        ],
      }),
    ],
  ])('tags that are not the session launch’s own: %s', (_name, mutate) => {
    const r = refusal('RunTask', mutate(sessionRunTask()));
    expect(r).toEqual({ field: 'tags', message: 'must be the launch’s own tags' });
  });

  it('tags that are not the pooled launch’s own', () => {
    const body = pooledRunTask();
    const r = refusal('RunTask', { ...body, tags: [...body.tags, { key: 'switchyard:session', value: 'ses_x' }] });
    expect(r).toEqual({ field: 'tags', message: 'must be the launch’s own tags' });
  });

  // Tags compared as `key=value` strings would let a tag with another key read as the launch's own
  // when the session id holds an `=` (the schema allows it).
  it('a tag whose key and value split the launch’s own tag at another `=`', () => {
    const body = sessionRunTask(RULES, { sessionId: 'ses_a=b' });
    const tags = body.tags.map((t) =>
      t.key === 'switchyard:session' ? { key: 'switchyard:session=ses_a', value: 'b' } : t,
    );
    const r = refusal('RunTask', { ...body, tags });
    expect(r.field).toBe('tags');
  });

  it.each<[string, (b: RunTaskBody) => unknown, string, string]>([
    ['another client token', (b) => ({ ...b, clientToken: 'another-token' }), 'clientToken', 'must be the runner id'],
    [
      'no client token',
      (b) => {
        const { clientToken: _t, ...rest } = b;
        return rest;
      },
      'clientToken',
      'must be the runner id',
    ],
    ['a client token over 64 characters', (b) => ({ ...b, clientToken: 'x'.repeat(65) }), 'clientToken', '64'],
  ])('session and pooled launches: %s', (_name, mutate, field, message) => {
    for (const body of [sessionRunTask(), pooledRunTask()]) {
      const r = refusal('RunTask', mutate(body));
      expect(r.field).toBe(field);
      expect(r.message).toContain(message);
    }
  });

  it('a session environment under startedBy switchyard-pool, and a pooled one under switchyard', () => {
    // Each kind is checked against its own schema: the other kind's dial-in URL is missing.
    expect(refusal('RunTask', { ...sessionRunTask(), startedBy: 'switchyard-pool' })).toEqual({
      field: `${ENV}.SWITCHYARD_POOL_URL`,
      message: 'Invalid input: expected string, received undefined',
    });
    expect(refusal('RunTask', { ...pooledRunTask(), startedBy: 'switchyard' })).toEqual({
      field: `${ENV}.SWITCHYARD_HUB_URL`,
      message: 'Invalid input: expected string, received undefined',
    });
  });

  it('a pooled environment carrying a session’s names too', () => {
    const body = setEnv(pooledRunTask(), 'SWITCHYARD_RUNNER_TOKEN', 'rt.v1.x');
    expect(refusal('RunTask', body)).toEqual({
      field: `${ENV}.SWITCHYARD_RUNNER_TOKEN`,
      message: 'Unrecognized key: "SWITCHYARD_RUNNER_TOKEN"',
    });
  });

  // On a plain object `out.__proto__ = value` is dropped, so the name once slipped past the strict
  // schema (and its duplicate check) while the re-serialized body still carried it to ECS.
  it.each([
    ['a session', sessionRunTask],
    ['a pooled', pooledRunTask],
  ])('%s environment carrying the name __proto__, once or twice', (_kind, make) => {
    for (const times of [1, 2]) {
      const body = withEnv(make(), (env) => [
        ...env,
        ...Array.from({ length: times }, (_, i) => ({ name: '__proto__', value: `x${i}` })),
      ]);
      const index = (body.overrides.containerOverrides[0]?.environment?.length ?? 0) - 1;
      expect(refusal('RunTask', body)).toEqual(
        times === 1
          ? { field: `${ENV}.__proto__`, message: 'Unrecognized key: "__proto__"' }
          : { field: `${ENV}.${index}.name`, message: '__proto__ is given twice' },
      );
    }
  });

  it('a session launch carrying the pool URL as its hub URL', () => {
    const body = setEnv(sessionRunTask(), 'SWITCHYARD_HUB_URL', 'wss://edge.switchyard.example/internal/runner/pool');
    expect(refusal('RunTask', body).field).toBe(`${ENV}.SWITCHYARD_HUB_URL`);
  });

  it.each([
    ['null', null],
    ['an array', [sessionRunTask()]],
    ['a string', JSON.stringify(sessionRunTask())],
  ])('a body that is %s', (_name, body) => {
    const r = refusal('RunTask', body);
    expect(r.field).toBe('');
    expect(r.message).toMatch(/expected object/);
  });
});

describe('refused: StopTask and DescribeTasks', () => {
  const arn = taskArn(RULES, '0123456789abcdef0123456789abcdef');
  it.each<[string, Operation, unknown, string, string]>([
    ['StopTask in another cluster', 'StopTask', { cluster: 'someone-elses', task: arn }, 'cluster', RULES.cluster],
    ['StopTask without a cluster (ECS’s default one)', 'StopTask', { task: arn }, 'cluster', RULES.cluster],
    ['StopTask with an empty task', 'StopTask', { cluster: RULES.cluster, task: '' }, 'task', '>=1'],
    [
      'StopTask with a reason over 255 characters',
      'StopTask',
      { cluster: RULES.cluster, task: arn, reason: 'x'.repeat(256) },
      'reason',
      '255',
    ],
    ['StopTask with an extra field', 'StopTask', { cluster: RULES.cluster, task: arn, force: true }, 'force', 'force'],
    [
      'DescribeTasks in another cluster',
      'DescribeTasks',
      { cluster: 'someone-elses', tasks: [arn] },
      'cluster',
      RULES.cluster,
    ],
    [
      'DescribeTasks of 101 tasks',
      'DescribeTasks',
      { cluster: RULES.cluster, tasks: Array.from({ length: 101 }, (_, i) => taskArn(RULES, `t${i}`)) },
      'tasks',
      '100',
    ],
    ['DescribeTasks of no task', 'DescribeTasks', { cluster: RULES.cluster, tasks: [] }, 'tasks', '>=1'],
    [
      'DescribeTasks with include',
      'DescribeTasks',
      { cluster: RULES.cluster, tasks: [arn], include: ['TAGS'] },
      'include',
      'include',
    ],
  ])('%s', (_name, operation, body, field, message) => {
    const r = refusal(operation, body);
    expect(r.field).toBe(field);
    expect(r.message).toContain(message);
  });
});
