// loadBrokerConfig: the Lambda's environment → rules and endpoints, with the regional defaults;
// an error names every bad variable and never echoes a value (the environment holds ARNs and ids
// an operator may not want in a log, and the message reaches the log).
import { describe, expect, it } from 'vitest';
import { loadBrokerConfig } from '../src/config.ts';

const ENV = {
  ECS_CLUSTER: 'switchyard-prod',
  ECS_TASK_DEFINITION: 'arn:aws:ecs:eu-central-1:123456789012:task-definition/switchyard-runner:7',
  ECS_SUBNETS: ' subnet-0a1b , subnet-2c3d,',
  ECS_SECURITY_GROUPS: 'sg-0e4f',
  AWS_REGION: 'eu-central-1',
  HUB_ORIGIN: 'https://edge.switchyard.example',
  BROKER_KEY_ID: 'SWITCHYARDBROKERKEY',
};

function loaded(env: Record<string, string | undefined>) {
  const r = loadBrokerConfig(env);
  if (!r.ok) throw new Error(r.error);
  return r.config;
}

function error(env: Record<string, string | undefined>): string {
  const r = loadBrokerConfig(env);
  if (r.ok) throw new Error('expected the configuration to be refused');
  return r.error;
}

describe('loadBrokerConfig', () => {
  it('the least configuration: regional ECS and STS endpoints, container `runner`, no public IP, identity on', () => {
    expect(loaded(ENV)).toEqual({
      rules: {
        cluster: 'switchyard-prod',
        taskDefinition: ENV.ECS_TASK_DEFINITION,
        containerName: 'runner',
        subnets: ['subnet-0a1b', 'subnet-2c3d'],
        securityGroups: ['sg-0e4f'],
        assignPublicIp: 'DISABLED',
        hubOrigins: ['https://edge.switchyard.example'],
        identity: { url: 'https://sts.eu-central-1.amazonaws.com/', region: 'eu-central-1' },
        allowLoopbackRepositories: false,
      },
      region: 'eu-central-1',
      ecsEndpoint: 'https://ecs.eu-central-1.amazonaws.com/',
      keyId: 'SWITCHYARDBROKERKEY',
      maxRunningTasks: 200,
    });
  });

  it('the defaults follow the region', () => {
    const c = loaded({ ...ENV, AWS_REGION: 'ap-southeast-2' });
    expect(c.ecsEndpoint).toBe('https://ecs.ap-southeast-2.amazonaws.com/');
    expect(c.rules.identity).toEqual({ url: 'https://sts.ap-southeast-2.amazonaws.com/', region: 'ap-southeast-2' });
  });

  it('RUNNER_IDENTITY=off: launches may name no identity endpoint', () => {
    expect(loaded({ ...ENV, RUNNER_IDENTITY: 'off' }).rules.identity).toBeNull();
  });

  it('the local stack’s overrides', () => {
    const c = loaded({
      ...ENV,
      HUB_ORIGIN: 'http://127.0.0.1:8787/, http://localhost:8787',
      ECS_CONTAINER_NAME: 'app',
      ECS_ASSIGN_PUBLIC_IP: 'ENABLED',
      ECS_ENDPOINT: 'http://127.0.0.1:9100',
      STS_ENDPOINT: 'http://127.0.0.1:9100/sts/',
      ALLOW_LOOPBACK_REPOSITORIES: '1',
    });
    expect(c.rules).toMatchObject({
      containerName: 'app',
      assignPublicIp: 'ENABLED',
      hubOrigins: ['http://127.0.0.1:8787', 'http://localhost:8787'],
      identity: { url: 'http://127.0.0.1:9100/sts/', region: 'eu-central-1' },
      allowLoopbackRepositories: true,
    });
    expect(c.ecsEndpoint).toBe('http://127.0.0.1:9100');
  });

  it('an empty variable counts as unset', () => {
    const c = loaded({ ...ENV, ECS_CONTAINER_NAME: '', ECS_ASSIGN_PUBLIC_IP: '', ECS_ENDPOINT: '' });
    expect(c.rules.containerName).toBe('runner');
    expect(c.rules.assignPublicIp).toBe('DISABLED');
    expect(c.ecsEndpoint).toBe('https://ecs.eu-central-1.amazonaws.com/');
  });

  it.each<[string, Record<string, string | undefined>, string, string | null]>([
    ['ECS_SUBNETS missing', { ECS_SUBNETS: undefined }, 'ECS_SUBNETS', null],
    ['ECS_SUBNETS only commas', { ECS_SUBNETS: ' , ,' }, 'ECS_SUBNETS', null],
    ['ECS_SECURITY_GROUPS missing', { ECS_SECURITY_GROUPS: undefined }, 'ECS_SECURITY_GROUPS', null],
    ['ECS_CLUSTER missing', { ECS_CLUSTER: undefined }, 'ECS_CLUSTER', null],
    ['ECS_TASK_DEFINITION blank', { ECS_TASK_DEFINITION: '   ' }, 'ECS_TASK_DEFINITION', null],
    ['BROKER_KEY_ID missing', { BROKER_KEY_ID: undefined }, 'BROKER_KEY_ID', null],
    ['HUB_ORIGIN missing', { HUB_ORIGIN: undefined }, 'HUB_ORIGIN', null],
    [
      'HUB_ORIGIN with a path',
      { HUB_ORIGIN: 'https://edge.switchyard.example/secret-path-x' },
      'HUB_ORIGIN',
      'secret-path-x',
    ],
    [
      'HUB_ORIGIN one of two with a path',
      { HUB_ORIGIN: 'https://edge.switchyard.example,https://b.example/p-q-r' },
      'HUB_ORIGIN.1',
      'p-q-r',
    ],
    ['HUB_ORIGIN not http(s)', { HUB_ORIGIN: 'wss://edge.switchyard.example' }, 'HUB_ORIGIN', 'wss://edge'],
    ['AWS_REGION bad', { AWS_REGION: 'eu-central-one-zzz' }, 'AWS_REGION', 'one-zzz'],
    ['AWS_REGION missing', { AWS_REGION: undefined }, 'AWS_REGION', null],
    ['ECS_ASSIGN_PUBLIC_IP bad', { ECS_ASSIGN_PUBLIC_IP: 'SOMETIMES-qq' }, 'ECS_ASSIGN_PUBLIC_IP', 'SOMETIMES-qq'],
    ['RUNNER_IDENTITY bad', { RUNNER_IDENTITY: 'iam-role-zz' }, 'RUNNER_IDENTITY', 'iam-role-zz'],
    ['ECS_ENDPOINT not http(s)', { ECS_ENDPOINT: 'ftp://ecs.internal-zz/' }, 'ECS_ENDPOINT', 'internal-zz'],
    ['STS_ENDPOINT not a URL', { STS_ENDPOINT: 'sts-host-zz' }, 'STS_ENDPOINT', 'sts-host-zz'],
    [
      'ALLOW_LOOPBACK_REPOSITORIES not 1',
      { ALLOW_LOOPBACK_REPOSITORIES: 'yes-please' },
      'ALLOW_LOOPBACK_REPOSITORIES',
      'yes-please',
    ],
  ])('%s: the error names it, not its value', (_name, over, variable, value) => {
    const message = error({ ...ENV, ...over });
    expect(message).toMatch(/^the launch broker is not configured: /);
    // A list variable names the entry too (HUB_ORIGIN.1).
    expect(message).toMatch(new RegExp(`: (.+; )?${variable}(\\.\\d+)?: `));
    if (value !== null) expect(message).not.toContain(value);
  });

  it('several bad variables are all named; the others and unrelated secrets are not', () => {
    const message = error({
      ...ENV,
      ECS_SUBNETS: undefined,
      AWS_REGION: 'nowhere',
      AWS_SECRET_ACCESS_KEY: 'lambda-role-secret-zz',
      BROKER_KEY_SECRET_ARN: 'arn:aws:secretsmanager:eu-central-1:1:secret:k',
    });
    expect(message).toContain('ECS_SUBNETS:');
    expect(message).toContain('AWS_REGION:');
    for (const v of ['ECS_CLUSTER', 'HUB_ORIGIN', 'lambda-role-secret-zz', 'secretsmanager', 'nowhere'])
      expect(message).not.toContain(v);
  });

  it('MAX_RUNNING_TASKS: 200 when unset, the number when given', () => {
    expect(loaded(ENV).maxRunningTasks).toBe(200);
    expect(loaded({ ...ENV, MAX_RUNNING_TASKS: '40' }).maxRunningTasks).toBe(40);
  });

  it.each(['0', '2.5', 'lots', '5001'])('MAX_RUNNING_TASKS=%s is refused, naming it and not echoing it', (value) => {
    const e = error({ ...ENV, MAX_RUNNING_TASKS: value });
    expect(e).toContain('MAX_RUNNING_TASKS: must be a whole number from 1 to 5000');
    expect(e).not.toContain(`"${value}"`);
  });
});
