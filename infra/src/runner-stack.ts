// Everything the runners need in AWS: a VPC whose private subnets reach out (never in), the
// ECS cluster, the runner task definition built from runner/Dockerfile, the model key in
// Secrets Manager, and the launch broker (broker/) the edge Worker starts and stops runners
// through: no AWS credential leaves AWS. docs/DESIGN.md "Deploy decisions" explains the
// choices; README "Deploying" is the operator's path.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Aws, CfnOutput, Duration, Fn, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import type { Construct } from 'constructs';
import { maxRunningTasksProblem } from '@switchyard/launch-broker';
import { RUNNER_CONNECT_PATH } from '@switchyard/protocol';
import { checkEgressDomains, EgressDnsFirewall, egressAllowList } from './egress-firewall.ts';
import {
  CONTAINER_NAME,
  DROPPED_CAPS,
  STOP_TIMEOUT_SECONDS,
  TASK_CPU_UNITS,
  TASK_MEMORY_MIB,
  VOLUMES,
} from './runner-container.ts';

export interface RunnerStackProps extends StackProps {
  /**
   * The https origin of the deployed edge Worker (`https://switchyard.example.com`): the only
   * hub origin the broker lets a launch tell a runner to dial.
   */
  edgeOrigin: string;
  /** Names the cluster (`<prefix>`), the task family (`<prefix>-runner`), the broker and the secrets. */
  prefix?: string;
  /** An Anthropic-Messages-compatible endpoint (a gateway) instead of the provider's; not a secret. */
  modelUrl?: string;
  /** The image; default: built from runner/Dockerfile by `cdk deploy` (needs a Docker engine there). */
  image?: ecs.ContainerImage;
  /** Of the runner and broker log groups; default one month. */
  logRetention?: logs.RetentionDays;
  /**
   * Names the runners may resolve beyond what they need themselves (e.g. a package registry).
   * Unset: names resolve as usual. Set, even empty: a DNS firewall answers nothing else
   * (`checkEgressDomains` reads it from the context; egress-firewall.ts).
   */
  egressDomains?: readonly string[];
  /**
   * The most runner tasks the cluster may have running or starting; the broker refuses a RunTask
   * past it (broker/src/running-cap.ts). Default: the broker's (`MAX_RUNNING_TASKS_RANGE`).
   */
  maxRunners?: number;
}

/** The `[env.production.vars]` of wrangler.toml this stack determines, in the order they are printed. */
export const WRANGLER_VARS = [
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
] as const;

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** `value` if it is an https origin and nothing more (the broker compares hub URLs against it exactly). */
export function checkEdgeOrigin(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (url?.protocol !== 'https:' || url.origin !== value) {
    throw new Error(
      `edgeOrigin must be the Worker's https origin, scheme and host only (e.g. https://switchyard.example.com, no path or trailing slash); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/**
 * `value` if it is an https URL on the default port: the runners send the model key to it, and
 * their security group lets only TCP 443 out, so plain http would carry the key in clear and any
 * other port would fail only when a session first calls the model.
 */
export function checkModelUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (url?.protocol !== 'https:' || url.port !== '' || url.username !== '' || url.password !== '') {
    throw new Error(
      `modelUrl must be an https URL on the default port, without credentials (e.g. https://gateway.example.com/anthropic); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** `value` if it is a ceiling the broker takes (broker/src/running-cap.ts). */
export function checkMaxRunners(value: number): number {
  const problem = maxRunningTasksProblem(value);
  if (problem !== null) throw new Error(`maxRunners ${problem}; got ${JSON.stringify(value)}`);
  return value;
}

export class RunnerStack extends Stack {
  readonly cluster: ecs.Cluster;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly broker: nodejs.NodejsFunction;

  constructor(scope: Construct, id: string, props: RunnerStackProps) {
    super(scope, id, props);
    const prefix = props.prefix ?? 'switchyard';
    const edgeOrigin = checkEdgeOrigin(props.edgeOrigin);
    const modelUrl = props.modelUrl === undefined ? undefined : checkModelUrl(props.modelUrl);
    const egressDomains = checkEgressDomains(props.egressDomains);
    const maxRunners = props.maxRunners === undefined ? undefined : checkMaxRunners(props.maxRunners);
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    // Two AZs, one NAT gateway: runners only dial out (to the edge and the model API), and a
    // second NAT doubles the fixed cost for an AZ outage that only delays new sessions.
    const flowLogs = new logs.LogGroup(this, 'VpcFlowLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 1,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'runners', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
      ],
      // Agent code runs in these subnets: keep a record of where it connected.
      flowLogs: {
        all: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs),
          trafficType: ec2.FlowLogTrafficType.ALL,
        },
      },
    });

    // No inbound rule at all; out only HTTPS (the hub's wss://, the model API, what the
    // agent's web tools fetch). DNS to the VPC resolver is not subject to security groups.
    const sg = new ec2.SecurityGroup(this, 'RunnerSecurityGroup', {
      vpc,
      description: 'Switchyard runners: no inbound; outbound HTTPS only',
      allowAllOutbound: false,
    });
    sg.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'hub link, model API, agent web tools');
    if (egressDomains !== undefined) {
      new EgressDnsFirewall(this, 'EgressDnsFirewall', {
        vpc,
        prefix,
        allow: egressAllowList({ edgeOrigin, modelUrl, extra: egressDomains }),
      });
    }

    this.cluster = new ecs.Cluster(this, 'Cluster', {
      clusterName: prefix,
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });

    // The provider key: an ECS `secrets` entry (resolved by the execution role at start), never
    // an environment value or a RunTask override. Created empty-ish; README "Deploying" sets it.
    const modelKey = new secretsmanager.Secret(this, 'ModelKey', {
      secretName: `${prefix}/model-key`,
      description: 'ANTHROPIC_API_KEY for Switchyard runners (set with aws secretsmanager put-secret-value)',
    });

    // Both roles only for ECS acting for this account (no confused deputy: another account's task
    // naming these roles is refused).
    const ecsTasks = () =>
      new iam.ServicePrincipal('ecs-tasks.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:ecs:${Aws.REGION}:${Aws.ACCOUNT_ID}:*` },
        },
      });
    // The runner calls no AWS API. Its task role is its identity to the edge: the runner signs an
    // STS GetCallerIdentity request with the role's credentials, which needs no permission (DESIGN
    // "Runner identity"). It denies every action, so those credentials open nothing else, a
    // resource policy open to the account or the organisation included.
    const taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: ecsTasks(),
      description: 'Switchyard runner task role: no permissions; the runner proves its task identity with it',
      inlinePolicies: {
        DenyAll: new iam.PolicyDocument({
          statements: [new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: ['*'], resources: ['*'] })],
        }),
      },
    });
    // Pull the image, write the log stream, read the one secret: CDK adds exactly these grants.
    const executionRole = new iam.Role(this, 'ExecutionRole', {
      assumedBy: ecsTasks(),
      description: 'Switchyard runner execution role: image pull, logs, the model key',
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'RunnerTask', {
      family: `${prefix}-runner`,
      cpu: TASK_CPU_UNITS,
      memoryLimitMiB: TASK_MEMORY_MIB,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.X86_64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
      taskRole,
      executionRole,
      // Task-local volumes on the task's ephemeral storage (20 GiB, the Fargate minimum), seeded
      // from the image's VOLUME directories (owners and modes included) because the paths match.
      volumes: VOLUMES.map((v) => ({ name: v.name })),
    });

    const logGroup = new logs.LogGroup(this, 'RunnerLogs', {
      logGroupName: `/${prefix}/runner`,
      retention: logRetention,
      // Kept when the stack is deleted, but not when its creation rolls back: a named group kept
      // then would make every retry of the first deploy fail with "already exists".
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });

    const container = this.taskDefinition.addContainer('Runner', {
      containerName: CONTAINER_NAME,
      image:
        props.image ??
        ecs.ContainerImage.fromAsset(repoRoot, { file: 'runner/Dockerfile', platform: Platform.LINUX_AMD64 }),
      essential: true,
      // The image's ENTRYPOINT (tini → setpriv → switchyard-runner) and CMD (serve) as built.
      // No `user`: tini must start as root so setpriv can drop the runner to uid 10001 with four
      // capabilities and the runner can drop the CLI to 10002 with none (DESIGN "Sandbox").
      readonlyRootFilesystem: true,
      privileged: false,
      linuxParameters: new ecs.LinuxParameters(this, 'RunnerLinux', {}),
      stopTimeout: Duration.seconds(STOP_TIMEOUT_SECONDS),
      secrets: { ANTHROPIC_API_KEY: ecs.Secret.fromSecretsManager(modelKey) },
      ...(modelUrl === undefined ? {} : { environment: { SWITCHYARD_MODEL_URL: modelUrl } }),
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: 'runner' }),
    });
    container.linuxParameters?.dropCapabilities(...DROPPED_CAPS.map((c) => ecs.Capability[c]));
    container.addMountPoints(
      ...VOLUMES.map((v) => ({ sourceVolume: v.name, containerPath: v.containerPath, readOnly: false })),
    );

    // The launch broker. A Worker has no identity AWS can federate, and any AWS key that can
    // RunTask can also override a task's command and environment (IAM has no condition key for
    // overrides). So the edge holds no AWS credential: it signs its ECS requests (SigV4) with a
    // broker key, whose secret half is generated here, and sends them to this function, which
    // checks the signature and the request against the runner's launch contract (broker/) and
    // forwards what passes to ECS with its own role. That role is the only ECS/PassRole holder.
    const brokerKeyId = `${prefix}-edge`;
    const brokerKey = new secretsmanager.Secret(this, 'BrokerKey', {
      secretName: `${prefix}/broker-key`,
      description: `Secret of the broker key ${brokerKeyId}: the edge Worker's AWS_SECRET_ACCESS_KEY for the launch broker`,
      // A plain string (SigV4 takes any secret): 48 alphanumerics, ~285 bits.
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
    });
    const brokerLogs = new logs.LogGroup(this, 'BrokerLogs', {
      logGroupName: `/${prefix}/broker`,
      retention: logRetention,
      // Who launched and stopped what: kept like the runner logs.
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    const brokerRole = new iam.Role(this, 'BrokerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Switchyard launch broker: start, stop and describe runners, read the broker key, write its logs',
    });
    const taskDefinitionFamilyArn = Stack.of(this).formatArn({
      service: 'ecs',
      resource: 'task-definition',
      resourceName: `${this.taskDefinition.family}:*`,
    });
    const clusterTasksArn = Stack.of(this).formatArn({
      service: 'ecs',
      resource: 'task',
      resourceName: `${prefix}/*`,
    });
    for (const statement of [
      new iam.PolicyStatement({
        sid: 'RunRunnerTasks',
        actions: ['ecs:RunTask'],
        resources: [taskDefinitionFamilyArn],
        conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
      }),
      new iam.PolicyStatement({
        sid: 'StopAndDescribeRunnerTasks',
        actions: ['ecs:StopTask', 'ecs:DescribeTasks'],
        resources: [clusterTasksArn],
      }),
      // The count before each RunTask (the broker's ceiling on running tasks). ListTasks has no
      // task resource to name; the condition keeps it to the one cluster.
      new iam.PolicyStatement({
        sid: 'CountRunnerTasks',
        actions: ['ecs:ListTasks'],
        resources: ['*'],
        conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
      }),
      new iam.PolicyStatement({
        sid: 'TagTasksAtLaunch',
        actions: ['ecs:TagResource'],
        resources: [clusterTasksArn],
        conditions: { StringEquals: { 'ecs:CreateAction': 'RunTask' } },
      }),
      new iam.PolicyStatement({
        sid: 'PassRunnerRoles',
        actions: ['iam:PassRole'],
        resources: [taskRole.roleArn, executionRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      }),
      // GetSecretValue alone (grantRead would add DescribeSecret, which the broker never calls).
      new iam.PolicyStatement({
        sid: 'ReadBrokerKey',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [brokerKey.secretArn],
      }),
      // Its own log group only (no AWSLambdaBasicExecutionRole: that one writes to any group).
      new iam.PolicyStatement({
        sid: 'WriteBrokerLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [brokerLogs.logGroupArn],
      }),
    ]) {
      brokerRole.addToPolicy(statement);
    }

    // Never a Docker build: CDK falls back to one when it cannot find esbuild.
    try {
      createRequire(import.meta.url).resolve('esbuild');
    } catch {
      throw new Error(
        'esbuild is not installed (run `npm ci` at the repository root): the launch broker is bundled with it',
      );
    }
    const subnets = vpc.selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }).subnetIds;
    // The launch settings (protocol's EcsLaunchSettingsShape): the edge sends them, the broker pins them.
    const launchSettings = {
      ECS_CLUSTER: this.cluster.clusterName,
      ECS_TASK_DEFINITION: this.taskDefinition.family,
      ECS_CONTAINER_NAME: container.containerName,
      ECS_SUBNETS: Fn.join(',', subnets),
      ECS_SECURITY_GROUPS: sg.securityGroupId,
      ECS_ASSIGN_PUBLIC_IP: 'DISABLED',
    };
    this.broker = new nodejs.NodejsFunction(this, 'Broker', {
      functionName: `${prefix}-launch-broker`,
      description: "Switchyard launch broker: checks the edge's signed ECS requests and forwards the allowed ones",
      entry: `${repoRoot}broker/src/lambda.ts`,
      handler: 'handler',
      projectRoot: repoRoot,
      depsLockFilePath: `${repoRoot}package-lock.json`,
      // The newest Node.js this aws-cdk-lib has (cdk-nag AwsSolutions-L1 wants the newest).
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 256,
      timeout: Duration.seconds(30),
      role: brokerRole,
      logGroup: brokerLogs,
      // No reservedConcurrentExecutions: a new account's concurrency quota can be 10, all of it
      // kept unreserved by Lambda, so any reservation would fail the deploy.
      bundling: {
        forceDockerBundling: false,
        format: nodejs.OutputFormat.ESM,
        minify: true,
        // No source map: Node reads one only with --enable-source-maps, and the broker logs messages, not stacks.
        sourceMap: false,
      },
      // What the broker pins a request to: the edge's RunTask must name exactly these.
      environment: {
        ...launchSettings,
        HUB_ORIGIN: edgeOrigin,
        BROKER_KEY_ID: brokerKeyId,
        BROKER_KEY_SECRET_ARN: brokerKey.secretArn,
        ...(maxRunners !== undefined && { MAX_RUNNING_TASKS: String(maxRunners) }),
      },
    });
    // Auth type NONE on purpose: the caller is a Worker, which cannot sign with AWS credentials
    // (the point of the broker). The broker authenticates every request itself, by its SigV4
    // signature with the broker key, before it looks at anything else.
    const brokerUrl = this.broker.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });

    // What wrangler.toml's [env.production.vars] needs, one output each and all of them as a
    // block to paste (CloudFormation output keys cannot hold `_`, so the var name is the
    // description and the block's text). The edge still sends cluster, subnets etc. in its
    // RunTask; the broker refuses any that differ from its own.
    const values: Record<(typeof WRANGLER_VARS)[number], string> = {
      ...launchSettings,
      // The edge's ECS client sends its requests here instead of to ECS.
      ECS_ENDPOINT: brokerUrl.url,
      AWS_REGION: Aws.REGION,
      // The role whose ECS sessions runners prove they hold (edge: DESIGN "Runner identity").
      RUNNER_TASK_ROLE_ARN: taskRole.roleArn,
      // Runners dial the one origin the broker lets through, whichever host name a request came in by.
      RUNNER_HUB_URL: `${edgeOrigin.replace(/^https:/, 'wss:')}${RUNNER_CONNECT_PATH}`,
    };
    for (const name of WRANGLER_VARS) {
      new CfnOutput(this, name.replaceAll('_', ''), {
        value: values[name],
        description: `wrangler.toml [env.production.vars] ${name}`,
      });
    }
    new CfnOutput(this, 'WranglerProductionVars', {
      description: 'paste into wrangler.toml [env.production.vars]',
      value: Fn.join(
        '',
        WRANGLER_VARS.flatMap((name) => [`\n${name} = "`, values[name], '"']),
      ),
    });

    // The broker key: two Worker secrets, never wrangler vars (README "Deploying").
    new CfnOutput(this, 'BrokerKeyId', {
      value: brokerKeyId,
      description: 'wrangler secret put AWS_ACCESS_KEY_ID',
    });
    new CfnOutput(this, 'BrokerKeySecretArn', {
      value: brokerKey.secretArn,
      description:
        'aws secretsmanager get-secret-value --secret-id <this ARN> --query SecretString --output text, then wrangler secret put AWS_SECRET_ACCESS_KEY',
    });

    // Acknowledged cdk-nag findings, each with its reason; nothing else may be reported
    // (test/nag.test.ts, and `cdk synth` fails on any unacknowledged one).
    Validations.of(modelKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A provider API key is rotated at the provider, then stored with put-secret-value; no rotation Lambda can mint one.',
    });
    Validations.of(executionRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'ecr:GetAuthorizationToken has no resource-level permissions; the other grants name the image repository, the log group and the secret.',
    });
    Validations.of(brokerKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        "Its other copy is the edge Worker's AWS_SECRET_ACCESS_KEY, set by hand with wrangler: an automatic rotation would lock the edge out, so rotating is putting a new value here and there (README).",
    });
    Validations.of(brokerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task-definition/${this.taskDefinition.family}:*]`,
      reason:
        'RunTask on any revision of the one runner family: launches name the family, so a new image (a new revision) needs no broker or Worker change.',
    });
    Validations.of(brokerRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'ecs:ListTasks has no task resource to name; its ecs:cluster condition keeps it to the one runner cluster, and it only counts.',
    });
    Validations.of(brokerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/${prefix}/*]`,
      reason:
        'Stop, describe and tag the tasks of the one runner cluster; task ids are random, so the cluster is the narrowest scope.',
    });
    if (props.modelUrl !== undefined) {
      Validations.of(this.taskDefinition).acknowledge({
        id: 'AwsSolutions-ECS2',
        reason:
          'The one plain environment value is SWITCHYARD_MODEL_URL, a non-secret endpoint; the key is a secrets entry.',
      });
    }
  }
}
