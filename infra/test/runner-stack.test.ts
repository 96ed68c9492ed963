import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DROPPED_CAPS,
  KEPT_CAPS,
  RUNNER_SHUTDOWN_BOUND_SECONDS,
  STOP_TIMEOUT_SECONDS,
  TASK_CPU_UNITS,
  TASK_MEMORY_MIB,
  VOLUMES,
} from '../src/runner-container.ts';
import { checkEdgeOrigin, checkModelUrl, RunnerStack, WRANGLER_VARS } from '../src/runner-stack.ts';
import { EDGE_ORIGIN } from './helpers.ts';

// Every promise of the stack, read off the synthesized CloudFormation template.

type Statement = {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, unknown>;
};
const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resources = (s: Statement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

let template: Template;
let dockerImages: { source: Record<string, unknown> }[];
/** The broker's bundle as the Lambda runtime would load it: its asset's packaging and its `handler` export. */
let brokerBundle: { packaging: string | undefined; handler: unknown } | undefined;
let json: {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] }>;
  Outputs: Record<string, { Value: unknown; Description: string }>;
};
const ofType = (type: string) => Object.entries(json.Resources).filter(([, r]) => r.Type === type);
const only = (type: string) => {
  const all = ofType(type);
  expect(all, type).toHaveLength(1);
  return all[0]!;
};
const logicalId = (type: string, match: (p: Record<string, unknown>) => boolean) => {
  const found = ofType(type).filter(([, r]) => match(r.Properties));
  expect(found, type).toHaveLength(1);
  return found[0]![0];
};

beforeAll(async () => {
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'sy-infra-')) });
  new RunnerStack(app, 'SwitchyardRunners', { edgeOrigin: EDGE_ORIGIN });
  try {
    const artifact = app.synth().getStackByName('SwitchyardRunners');
    template = Template.fromJSON(artifact.template as Record<string, unknown>);
    json = template.toJSON() as typeof json;
    const manifest = JSON.parse(readFileSync(join(app.outdir, 'SwitchyardRunners.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string; packaging?: string } }>;
      dockerImages: Record<string, { source: Record<string, unknown> }>;
    };
    dockerImages = Object.values(manifest.dockerImages);
    // The function's code is the file asset its S3 key names; import it as the runtime would.
    const fn = Object.values(json.Resources).find((r) => r.Type === 'AWS::Lambda::Function');
    const s3Key = (fn?.Properties.Code as { S3Key?: unknown } | undefined)?.S3Key;
    const asset = typeof s3Key === 'string' ? manifest.files[s3Key.replace(/\.zip$/, '')] : undefined;
    if (asset !== undefined) {
      // A missing or unloadable bundle fails the bundle test, not every test of the file.
      const mod = (await import(pathToFileURL(join(app.outdir, asset.source.path, 'index.mjs')).href).catch(
        (err: unknown) => ({ handler: err }),
      )) as Record<string, unknown>;
      brokerBundle = { packaging: asset.source.packaging, handler: mod.handler };
    }
  } finally {
    rmSync(app.outdir, { recursive: true, force: true });
  }
});

describe('network', () => {
  it('private subnets without public IPs, their default route through a NAT gateway', () => {
    template.resourceCountIs('AWS::EC2::NatGateway', 1);
    const privateSubnets = ofType('AWS::EC2::Subnet').filter(([, r]) =>
      (r.Properties.Tags as { Key: string; Value: string }[]).some(
        (t) => t.Key === 'aws-cdk:subnet-type' && t.Value === 'Private',
      ),
    );
    expect(privateSubnets).toHaveLength(2);
    for (const [, s] of privateSubnets) expect(s.Properties.MapPublicIpOnLaunch).toBe(false);
    template.resourcePropertiesCountIs(
      'AWS::EC2::Route',
      { DestinationCidrBlock: '0.0.0.0/0', NatGatewayId: Match.anyValue() },
      2,
    );
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'ALL', LogDestinationType: 'cloud-watch-logs' });
  });

  it('the runner security group: no inbound rule, out only TCP 443', () => {
    const [, sg] = only('AWS::EC2::SecurityGroup');
    expect(sg.Properties.SecurityGroupIngress).toBeUndefined();
    template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
    expect(sg.Properties.SecurityGroupEgress).toEqual([
      { CidrIp: '0.0.0.0/0', IpProtocol: 'tcp', FromPort: 443, ToPort: 443, Description: expect.any(String) },
    ]);
    template.resourceCountIs('AWS::EC2::SecurityGroupEgress', 0);
  });
});

describe('cluster and task definition', () => {
  it('a Fargate cluster with Container Insights', () => {
    template.hasResourceProperties('AWS::ECS::Cluster', {
      ClusterName: 'switchyard',
      ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }],
    });
  });

  it('Fargate, awsvpc, sized at least 3x the measured per-session RSS (314 MiB), x86_64', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      Family: 'switchyard-runner',
      RequiresCompatibilities: ['FARGATE'],
      NetworkMode: 'awsvpc',
      Cpu: String(TASK_CPU_UNITS),
      Memory: String(TASK_MEMORY_MIB),
      RuntimePlatform: { CpuArchitecture: 'X86_64', OperatingSystemFamily: 'LINUX' },
    });
    expect(TASK_MEMORY_MIB).toBeGreaterThanOrEqual(3 * 314);
  });

  const container = () => {
    const [, td] = only('AWS::ECS::TaskDefinition');
    const defs = td.Properties.ContainerDefinitions as Record<string, unknown>[];
    expect(defs).toHaveLength(1);
    return { td: td.Properties, c: defs[0]! };
  };

  it('one essential container "runner" from the image asset built of runner/Dockerfile; ENTRYPOINT/CMD as the image has them', () => {
    const { c } = container();
    expect(c.Name).toBe('runner');
    expect(c.Essential).toBe(true);
    expect(JSON.stringify(c.Image)).toMatch(/container-assets/);
    expect(c.EntryPoint).toBeUndefined();
    expect(c.Command).toBeUndefined();
    expect(dockerImages.map((i) => i.source)).toEqual([
      { directory: expect.any(String), dockerFile: 'runner/Dockerfile', platform: 'linux/amd64' },
    ]);
  });

  it('read-only root, not privileged, no `user` (tini starts as root and setpriv drops), every default capability but the four dropped', () => {
    const { c } = container();
    expect(c.ReadonlyRootFilesystem).toBe(true);
    expect(c.Privileged).toBe(false);
    expect(c.User).toBeUndefined();
    const caps = (c.LinuxParameters as { Capabilities: { Add?: string[]; Drop: string[] } }).Capabilities;
    expect(caps.Add).toBeUndefined();
    expect([...caps.Drop].sort()).toEqual([...DROPPED_CAPS].sort());
    expect(caps.Drop.filter((d) => (KEPT_CAPS as readonly string[]).includes(d))).toEqual([]);
  });

  it('the runner keeps exactly the capabilities the image entrypoint raises', () => {
    const dockerfile = readFileSync(fileURLToPath(new URL('../../runner/Dockerfile', import.meta.url)), 'utf8');
    const ambient = /"--ambient-caps", "([^"]+)"/.exec(dockerfile)?.[1];
    expect(
      ambient
        ?.split(',')
        .map((c) => c.replace(/^\+/, '').toUpperCase())
        .sort(),
    ).toEqual([...KEPT_CAPS].sort());
  });

  it('writable volumes only for /workspace, /home/switchyard and /tmp, task-local (no host path, no EFS)', () => {
    const { td, c } = container();
    expect(VOLUMES.map((v) => v.containerPath)).toEqual(['/workspace', '/home/switchyard', '/tmp']);
    expect(td.Volumes).toEqual(VOLUMES.map((v) => ({ Name: v.name })));
    expect(c.MountPoints).toEqual(
      VOLUMES.map((v) => ({ SourceVolume: v.name, ContainerPath: v.containerPath, ReadOnly: false })),
    );
  });

  it('stopTimeout above the runner shutdown deadline', () => {
    const { c } = container();
    expect(c.StopTimeout).toBe(STOP_TIMEOUT_SECONDS);
    expect(STOP_TIMEOUT_SECONDS).toBeGreaterThan(RUNNER_SHUTDOWN_BOUND_SECONDS);
    expect(STOP_TIMEOUT_SECONDS).toBeLessThanOrEqual(120);
  });

  it('logs to CloudWatch with a retention', () => {
    const { c } = container();
    const logGroup = logicalId('AWS::Logs::LogGroup', (p) => p.LogGroupName === '/switchyard/runner');
    expect(c.LogConfiguration).toEqual({
      LogDriver: 'awslogs',
      Options: {
        'awslogs-group': { Ref: logGroup },
        'awslogs-stream-prefix': 'runner',
        'awslogs-region': { Ref: 'AWS::Region' },
      },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/switchyard/runner', RetentionInDays: 30 });
  });

  it('the named log groups outlive the stack but not a first deploy that rolls back', () => {
    // Retain on creation too would leave the names taken and fail every retry of that deploy.
    for (const name of ['/switchyard/runner', '/switchyard/broker']) {
      const id = logicalId('AWS::Logs::LogGroup', (p) => p.LogGroupName === name);
      expect(json.Resources[id]).toMatchObject({
        DeletionPolicy: 'RetainExceptOnCreate',
        UpdateReplacePolicy: 'Retain',
      });
    }
  });

  it('the model key is a Secrets Manager `secrets` entry, no plain environment', () => {
    const { c } = container();
    const secret = logicalId('AWS::SecretsManager::Secret', (p) => p.Name === 'switchyard/model-key');
    expect(c.Secrets).toEqual([{ Name: 'ANTHROPIC_API_KEY', ValueFrom: { Ref: secret } }]);
    expect(c.Environment).toBeUndefined();
  });

  it('a model gateway URL is the one plain environment value', () => {
    const t = Template.fromStack(
      new RunnerStack(new App(), 'S', { edgeOrigin: EDGE_ORIGIN, modelUrl: 'https://gateway.example/anthropic' }),
    );
    t.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: [
        Match.objectLike({
          Environment: [{ Name: 'SWITCHYARD_MODEL_URL', Value: 'https://gateway.example/anthropic' }],
        }),
      ],
    });
  });
});

describe('IAM', () => {
  /** An ECS ARN of this stack's account and region, as CDK writes it into the template. */
  const ecsArn = (resource: string) => ({
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':ecs:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:${resource}`,
      ],
    ],
  });
  const roleId = (description: RegExp) => logicalId('AWS::IAM::Role', (p) => description.test(String(p.Description)));
  const policiesOf = (role: string) =>
    ofType('AWS::IAM::Policy').filter(
      ([, p]) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: role }]),
    );

  it('the task role has no permission at all: it denies every action', () => {
    const task = roleId(/task role/);
    const [, role] = ofType('AWS::IAM::Role').find(([id]) => id === task)!;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toEqual([
      {
        PolicyName: 'DenyAll',
        PolicyDocument: { Version: '2012-10-17', Statement: [{ Effect: 'Deny', Action: '*', Resource: '*' }] },
      },
    ]);
    expect(policiesOf(task)).toEqual([]);
    expect(
      ofType('AWS::IAM::ManagedPolicy').filter(([, p]) => JSON.stringify(p.Properties.Roles ?? []).includes(task)),
    ).toEqual([]);
  });

  it('both roles trust only ECS acting for this account', () => {
    for (const id of [roleId(/task role/), roleId(/execution role/)]) {
      const [, role] = ofType('AWS::IAM::Role').find(([i]) => i === id)!;
      const [statement, ...more] = (role.Properties.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement;
      expect(more).toEqual([]);
      expect(statement).toMatchObject({
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { Service: 'ecs-tasks.amazonaws.com' },
        Condition: {
          StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          ArnLike: {
            'aws:SourceArn': ecsArn('*'),
          },
        },
      });
    }
  });

  it('the execution role: pull the image, write its log stream, read the one secret', () => {
    const exec = roleId(/execution role/);
    const policies = policiesOf(exec);
    expect(policies).toHaveLength(1);
    const statements = (policies[0]![1].Properties.PolicyDocument as { Statement: Statement[] }).Statement;
    const secret = logicalId('AWS::SecretsManager::Secret', (p) => p.Name === 'switchyard/model-key');
    const logGroup = logicalId('AWS::Logs::LogGroup', (p) => p.LogGroupName === '/switchyard/runner');
    const granted = new Map<string, unknown[]>();
    for (const s of statements) {
      expect(s.Effect).toBe('Allow');
      for (const a of actions(s)) granted.set(a, resources(s));
    }
    expect([...granted.keys()].sort()).toEqual([
      'ecr:BatchCheckLayerAvailability',
      'ecr:BatchGetImage',
      'ecr:GetAuthorizationToken',
      'ecr:GetDownloadUrlForLayer',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'secretsmanager:DescribeSecret',
      'secretsmanager:GetSecretValue',
    ]);
    expect(granted.get('ecr:GetAuthorizationToken')).toEqual(['*']);
    for (const a of ['ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer', 'ecr:BatchCheckLayerAvailability']) {
      expect(JSON.stringify(granted.get(a))).toMatch(/repository\/.*container-assets/);
    }
    expect(granted.get('logs:PutLogEvents')).toEqual([{ 'Fn::GetAtt': [logGroup, 'Arn'] }]);
    expect(granted.get('secretsmanager:GetSecretValue')).toEqual([{ Ref: secret }]);
  });

  it('no IAM user, access key or managed policy anywhere: no AWS credential leaves AWS', () => {
    template.resourceCountIs('AWS::IAM::User', 0);
    template.resourceCountIs('AWS::IAM::AccessKey', 0);
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    for (const [id, p] of ofType('AWS::IAM::Policy')) {
      expect(p.Properties.Users, id).toBeUndefined();
      expect(p.Properties.Groups, id).toBeUndefined();
    }
  });

  it('the broker role: trusts only Lambda; exactly RunTask on the family in the cluster, Stop/Describe/Tag-at-launch on its tasks, PassRole on the two roles, the broker key, its log group', () => {
    const broker = roleId(/launch broker/);
    const [, role] = ofType('AWS::IAM::Role').find(([id]) => id === broker)!;
    expect((role.Properties.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement).toEqual([
      { Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { Service: 'lambda.amazonaws.com' } },
    ]);
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toBeUndefined();
    const policies = policiesOf(broker);
    expect(policies).toHaveLength(1);
    const cluster = only('AWS::ECS::Cluster')[0];
    const tasks = ecsArn('task/switchyard/*');
    const brokerKey = logicalId('AWS::SecretsManager::Secret', (p) => p.Name === 'switchyard/broker-key');
    const brokerLogs = logicalId('AWS::Logs::LogGroup', (p) => p.LogGroupName === '/switchyard/broker');
    expect((policies[0]![1].Properties.PolicyDocument as { Statement: Statement[] }).Statement).toEqual([
      {
        Sid: 'RunRunnerTasks',
        Effect: 'Allow',
        Action: 'ecs:RunTask',
        Resource: ecsArn('task-definition/switchyard-runner:*'),
        Condition: { ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [cluster, 'Arn'] } } },
      },
      {
        Sid: 'StopAndDescribeRunnerTasks',
        Effect: 'Allow',
        Action: ['ecs:StopTask', 'ecs:DescribeTasks'],
        Resource: tasks,
      },
      {
        Sid: 'CountRunnerTasks',
        Effect: 'Allow',
        Action: 'ecs:ListTasks',
        Resource: '*',
        Condition: { ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [cluster, 'Arn'] } } },
      },
      {
        Sid: 'TagTasksAtLaunch',
        Effect: 'Allow',
        Action: 'ecs:TagResource',
        Resource: tasks,
        Condition: { StringEquals: { 'ecs:CreateAction': 'RunTask' } },
      },
      {
        Sid: 'PassRunnerRoles',
        Effect: 'Allow',
        Action: 'iam:PassRole',
        Resource: [{ 'Fn::GetAtt': [roleId(/task role/), 'Arn'] }, { 'Fn::GetAtt': [roleId(/execution role/), 'Arn'] }],
        Condition: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      },
      {
        Sid: 'ReadBrokerKey',
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: { Ref: brokerKey },
      },
      {
        Sid: 'WriteBrokerLogs',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: { 'Fn::GetAtt': [brokerLogs, 'Arn'] },
      },
    ]);
  });

  it('ECS and PassRole: the broker role is the only holder', () => {
    const broker = roleId(/launch broker/);
    for (const [id, p] of ofType('AWS::IAM::Policy')) {
      const granted = (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.filter(
        (s) => s.Effect === 'Allow',
      ).flatMap(actions);
      if (JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: broker }])) continue;
      expect(
        granted.filter((a) => /^(ecs|iam):/.test(a) || a === '*'),
        id,
      ).toEqual([]);
    }
  });

  it('nothing anywhere is granted on Resource "*" but ecr:GetAuthorizationToken, and ecs:ListTasks on the one cluster', () => {
    const docs = [...ofType('AWS::IAM::Policy'), ...ofType('AWS::IAM::ManagedPolicy')].flatMap(
      ([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
    );
    const star = docs.filter((s) => resources(s).includes('*'));
    expect(star.flatMap(actions).sort()).toEqual(['ecr:GetAuthorizationToken', 'ecs:ListTasks']);
    const cluster = only('AWS::ECS::Cluster')[0];
    expect(star.find((s) => actions(s).includes('ecs:ListTasks'))?.Condition).toEqual({
      ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [cluster, 'Arn'] } },
    });
  });
});

describe('launch broker', () => {
  const broker = () => only('AWS::Lambda::Function');
  const brokerKey = () => logicalId('AWS::SecretsManager::Secret', (p) => p.Name === 'switchyard/broker-key');

  it('a Node.js 24 function on arm64, handler `handler`, 256 MiB, 30 s, logging to its own group kept a month', () => {
    const [, fn] = broker();
    const logs = logicalId('AWS::Logs::LogGroup', (p) => p.LogGroupName === '/switchyard/broker');
    expect(fn.Properties).toMatchObject({
      FunctionName: 'switchyard-launch-broker',
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      MemorySize: 256,
      Timeout: 30,
      LoggingConfig: { LogGroup: { Ref: logs } },
    });
    // A reservation can exceed a new account's concurrency quota and fail the deploy.
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(fn.Properties.VpcConfig).toBeUndefined();
    template.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/switchyard/broker', RetentionInDays: 30 });
  });

  it('its environment: exactly what it pins a launch to, the hub origin, the key id and the key secret ARN', () => {
    const [, fn] = broker();
    const privateSubnets = ofType('AWS::EC2::Subnet')
      .filter(([, r]) => (r.Properties.Tags as { Key: string; Value: string }[]).some((t) => t.Value === 'Private'))
      .map(([id]) => ({ Ref: id }));
    expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toStrictEqual({
      ECS_CLUSTER: { Ref: only('AWS::ECS::Cluster')[0] },
      ECS_TASK_DEFINITION: 'switchyard-runner',
      ECS_CONTAINER_NAME: 'runner',
      ECS_SUBNETS: { 'Fn::Join': [',', privateSubnets] },
      ECS_SECURITY_GROUPS: { 'Fn::GetAtt': [only('AWS::EC2::SecurityGroup')[0], 'GroupId'] },
      ECS_ASSIGN_PUBLIC_IP: 'DISABLED',
      HUB_ORIGIN: EDGE_ORIGIN,
      BROKER_KEY_ID: 'switchyard-edge',
      BROKER_KEY_SECRET_ARN: { Ref: brokerKey() },
    });
  });

  it("its role is the broker role, and the function waits for the role's policy", () => {
    const [, fn] = broker();
    const [roleLogicalId] = ofType('AWS::IAM::Role').find(([, r]) =>
      /launch broker/.test(String(r.Properties.Description)),
    )!;
    expect(fn.Properties.Role).toEqual({ 'Fn::GetAtt': [roleLogicalId, 'Arn'] });
    const [policy] = ofType('AWS::IAM::Policy').find(
      ([, p]) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleLogicalId }]),
    )!;
    expect(fn.DependsOn).toContain(policy);
  });

  it('a function URL with auth type NONE (the broker checks every signature itself), invocable only through it', () => {
    const [fnId] = broker();
    const fnArn = { 'Fn::GetAtt': [fnId, 'Arn'] };
    const [, url] = only('AWS::Lambda::Url');
    expect(url.Properties).toStrictEqual({ AuthType: 'NONE', TargetFunctionArn: fnArn });
    // Public, but only as a function URL: nobody can call lambda:Invoke on it directly.
    expect(ofType('AWS::Lambda::Permission').map(([, p]) => p.Properties)).toEqual([
      { Action: 'lambda:InvokeFunctionUrl', FunctionName: fnArn, FunctionUrlAuthType: 'NONE', Principal: '*' },
      { Action: 'lambda:InvokeFunction', FunctionName: fnArn, InvokedViaFunctionUrl: true, Principal: '*' },
    ]);
  });

  it('the broker key: a plain 48-character alphanumeric string Secrets Manager generates', () => {
    const [, secret] = ofType('AWS::SecretsManager::Secret').find(([id]) => id === brokerKey())!;
    expect(secret.Properties.GenerateSecretString).toStrictEqual({ PasswordLength: 48, ExcludePunctuation: true });
    expect(secret.Properties.SecretString).toBeUndefined();
  });

  it('only the broker role may read the broker key, and its value is nowhere in the template', () => {
    const key = JSON.stringify({ Ref: brokerKey() });
    const broker = logicalId('AWS::IAM::Role', (p) => /launch broker/.test(String(p.Description)));
    const granting = ofType('AWS::IAM::Policy')
      .filter(([, p]) =>
        (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
          (s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(key),
        ),
      )
      .map(([, p]) => p.Properties.Roles);
    expect(granting).toEqual([[{ Ref: broker }]]);
    template.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
    template.resourceCountIs('AWS::KMS::Key', 0);
    expect(JSON.stringify(json)).not.toMatch(/resolve:secretsmanager/);
  });

  it('the bundle is an ES module (index.mjs) of broker/src/lambda.ts that exports the handler', () => {
    expect(brokerBundle?.packaging).toBe('zip');
    expect(typeof brokerBundle?.handler).toBe('function');
  });

  it("maxRunners is the broker's ceiling on running tasks (MAX_RUNNING_TASKS); unset, the broker's default applies", () => {
    const env = (t: Template): Record<string, unknown> => {
      const [fn] = Object.values(t.findResources('AWS::Lambda::Function'));
      return (fn?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {};
    };
    const ceilinged = Template.fromStack(
      new RunnerStack(new App(), 'SwitchyardRunners', { edgeOrigin: EDGE_ORIGIN, maxRunners: 40 }),
    );
    expect(env(ceilinged).MAX_RUNNING_TASKS).toBe('40');
    expect(env(template).MAX_RUNNING_TASKS).toBeUndefined();
    for (const bad of [0, 2.5, 5001, Number.NaN]) {
      expect(
        () => new RunnerStack(new App(), 'SwitchyardRunners', { edgeOrigin: EDGE_ORIGIN, maxRunners: bad }),
      ).toThrow(/^maxRunners must be a whole number from 1 to 5000/);
    }
  });

  it('modelUrl must be https on the default port, without credentials', () => {
    for (const bad of [
      'http://gateway.example.com/anthropic',
      'https://gateway.example.com:8443/anthropic',
      'https://user:pw@gateway.example.com/anthropic',
      'gateway.example.com',
    ]) {
      expect(() => new RunnerStack(new App(), 'S', { edgeOrigin: EDGE_ORIGIN, modelUrl: bad }), bad).toThrow(
        /modelUrl must be an https URL/,
      );
    }
    expect(checkModelUrl('https://gateway.example.com/anthropic')).toBe('https://gateway.example.com/anthropic');
  });

  it('edgeOrigin must be an https origin and nothing more', () => {
    for (const bad of [
      'http://switchyard.example.com',
      'https://switchyard.example.com/',
      'https://switchyard.example.com/app',
      'https://switchyard.example.com?x=1',
      'https://user@switchyard.example.com',
      'switchyard.example.com',
      'not a url',
      '',
    ]) {
      expect(() => new RunnerStack(new App(), 'S', { edgeOrigin: bad }), bad).toThrow(/edgeOrigin/);
    }
    for (const good of [
      'https://switchyard.example.com',
      'https://sy.example.org:8443',
      'https://xn--bcher-kva.example',
    ])
      expect(checkEdgeOrigin(good)).toBe(good);
  });
});

describe('outputs', () => {
  it('one output per wrangler var the stack determines, plus the paste-able block', () => {
    const byDescription = Object.fromEntries(Object.values(json.Outputs).map((o) => [o.Description, o.Value]));
    expect(WRANGLER_VARS).toEqual([
      'ECS_CLUSTER',
      'ECS_TASK_DEFINITION',
      'ECS_CONTAINER_NAME',
      'ECS_SUBNETS',
      'ECS_SECURITY_GROUPS',
      'ECS_ASSIGN_PUBLIC_IP',
      'ECS_ENDPOINT',
      'AWS_REGION',
      'RUNNER_TASK_ROLE_ARN',
      'RUNNER_HUB_URL',
    ]);
    expect(byDescription['wrangler.toml [env.production.vars] RUNNER_HUB_URL']).toBe(
      'wss://switchyard.example.com/internal/runner/connect',
    );
    // The wrangler vars, the block, and the broker key's two Worker secrets.
    expect(Object.keys(json.Outputs)).toHaveLength(WRANGLER_VARS.length + 3);
    for (const name of WRANGLER_VARS)
      expect(byDescription[`wrangler.toml [env.production.vars] ${name}`], name).toBeDefined();
    expect(byDescription['wrangler.toml [env.production.vars] ECS_TASK_DEFINITION']).toBe('switchyard-runner');
    expect(byDescription['wrangler.toml [env.production.vars] ECS_CONTAINER_NAME']).toBe('runner');
    expect(byDescription['wrangler.toml [env.production.vars] ECS_ASSIGN_PUBLIC_IP']).toBe('DISABLED');
    expect(byDescription['wrangler.toml [env.production.vars] AWS_REGION']).toEqual({ Ref: 'AWS::Region' });
    expect(byDescription['wrangler.toml [env.production.vars] ECS_ENDPOINT']).toEqual({
      'Fn::GetAtt': [only('AWS::Lambda::Url')[0], 'FunctionUrl'],
    });
    const privateSubnets = ofType('AWS::EC2::Subnet')
      .filter(([, r]) => (r.Properties.Tags as { Key: string; Value: string }[]).some((t) => t.Value === 'Private'))
      .map(([id]) => ({ Ref: id }));
    expect(byDescription['wrangler.toml [env.production.vars] ECS_SUBNETS']).toEqual({
      'Fn::Join': [',', privateSubnets],
    });
    // Resolved the way CloudFormation will (references stand in as <LogicalId>), the block is
    // one `NAME = "value"` line per var, in order, each value the var's own output.
    const resolve = (v: unknown): string => {
      if (typeof v === 'string') return v;
      const o = v as Record<string, unknown>;
      if ('Ref' in o) return `<${String(o.Ref)}>`;
      if ('Fn::GetAtt' in o) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
      if ('Fn::Join' in o) {
        const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
        return parts.map(resolve).join(sep);
      }
      throw new Error(`unexpected intrinsic ${JSON.stringify(v)}`);
    };
    const block = resolve(byDescription['paste into wrangler.toml [env.production.vars]']);
    expect(block.split('\n')).toEqual([
      '',
      ...WRANGLER_VARS.map(
        (name) => `${name} = "${resolve(byDescription[`wrangler.toml [env.production.vars] ${name}`])}"`,
      ),
    ]);
  });

  it('the broker key: its id and where to read its secret, as Worker secrets (never wrangler vars)', () => {
    const key = logicalId('AWS::SecretsManager::Secret', (p) => p.Name === 'switchyard/broker-key');
    expect(json.Outputs.BrokerKeyId).toEqual({
      Value: 'switchyard-edge',
      Description: 'wrangler secret put AWS_ACCESS_KEY_ID',
    });
    expect(json.Outputs.BrokerKeySecretArn?.Value).toEqual({ Ref: key });
    expect(json.Outputs.BrokerKeySecretArn?.Description).toMatch(
      /aws secretsmanager get-secret-value --secret-id .* --query SecretString --output text.*wrangler secret put AWS_SECRET_ACCESS_KEY/,
    );
    expect(JSON.stringify(json.Outputs.WranglerProductionVars)).not.toMatch(
      /AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|BrokerKey/,
    );
  });

  it('every one of them is a var of wrangler.toml [env.production.vars]', () => {
    const toml = readFileSync(fileURLToPath(new URL('../../wrangler.toml', import.meta.url)), 'utf8');
    const section = /^\[env\.production\.vars\]\n([\s\S]*?)(?=^\[)/m.exec(toml)?.[1] ?? '';
    const names = [...section.matchAll(/^([A-Z0-9_]+)\s*=/gm)].map((m) => m[1]);
    for (const name of WRANGLER_VARS) expect(names, name).toContain(name);
  });
});
