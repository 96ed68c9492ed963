import {
  DescribeTasksCommand,
  ECSClient,
  RunTaskCommand,
  StopTaskCommand,
  type KeyValuePair,
  type Task,
} from '@aws-sdk/client-ecs';
import { fetchSigned, launchEnvironment, type Backend, type RunnerIdentityProof } from '@switchyard/protocol';
import { poolLaunchEnvironment } from '@switchyard/protocol/pool';
import type { ProbeResult } from '../settings/backend-probe.ts';
import { loadEcsLauncherConfig, type EcsLauncherConfig } from './ecs-config.ts';
import type { LaunchRequest, Launcher, PoolLaunchRequest, RunnerDescription } from './launcher.ts';
import { verifyTaskIdentity, type IdentityVerdict, type TaskIdentityConfig } from './task-identity.ts';

// The production launcher (DESIGN.md "Launchers"): one Fargate task per runner through Amazon ECS
// RunTask / StopTask / DescribeTasks, called from inside the Worker with `@aws-sdk/client-ecs`
// (explicit credentials, so the SDK never looks for a credentials file). Its requests go to the
// launch broker at `ECS_ENDPOINT` (DESIGN.md "A leaked edge key running its own command"), which
// checks them and passes them on to ECS: the broker's Lambda in production, the local runner host's
// in dev.

export interface EcsLauncherOptions {
  /** For tests: a prebuilt client. */
  client?: ECSClient;
  /** How long a `task`-mode probe may run before it is stopped and reported unusable. */
  probeDeadlineMs?: number;
  /** DescribeTasks poll interval while a probe task runs. */
  probePollMs?: number;
  fetch?: typeof fetch;
}

const STARTED_BY = 'switchyard';
const STARTED_BY_PROBE = 'switchyard-probe';
const STARTED_BY_POOL = 'switchyard-pool';

export class EcsLauncher implements Launcher {
  readonly config: EcsLauncherConfig;
  private readonly client: ECSClient;
  private readonly opts: EcsLauncherOptions;

  constructor(config: EcsLauncherConfig, opts: EcsLauncherOptions = {}) {
    this.config = config;
    this.opts = opts;
    // A client per launcher (launchers are built per request): cheap, and nothing the SDK
    // memoizes can cross a Workers request context.
    this.client =
      opts.client ??
      new ECSClient({
        region: config.region,
        credentials: config.credentials,
        ...(config.endpoint !== undefined && { endpoint: config.endpoint }),
        maxAttempts: 3,
      });
  }

  /** Environment of the runner container: everything a runner needs to dial its hub and prove itself. */
  static containerEnvironment(r: LaunchRequest, identity: TaskIdentityConfig | null): KeyValuePair[] {
    const env = launchEnvironment({
      hubUrl: r.hubUrl,
      sessionId: r.sessionId,
      backend: r.backend,
      runnerId: r.launchId,
      idleMs: r.limits.idleMs,
      maxLifetimeMs: r.limits.maxLifetimeMs,
      runnerToken: r.runnerToken,
      model: r.model,
      ...(r.repositoryAllowLoopback === true && { repositoryAllowLoopback: true }),
      ...(r.fresh === true && { fresh: true }),
      ...(r.warmUp === true && { warmUp: true }),
      ...(identity !== null && { identity: identity.sts }),
    });
    return Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }]));
  }

  private runTaskInput(
    command: string[] | undefined,
    environment: KeyValuePair[],
    startedBy: string,
    clientToken: string | undefined,
    tags: { key: string; value: string }[],
  ) {
    const c = this.config;
    return {
      cluster: c.cluster,
      taskDefinition: c.taskDefinition,
      launchType: 'FARGATE' as const,
      count: 1,
      startedBy,
      ...(clientToken !== undefined && { clientToken }),
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: c.subnets,
          securityGroups: c.securityGroups,
          assignPublicIp: c.assignPublicIp,
        },
      },
      overrides: {
        containerOverrides: [
          {
            name: c.containerName,
            ...(command !== undefined && { command }),
            ...(environment.length > 0 && { environment }),
          },
        ],
      },
      tags,
      enableExecuteCommand: false,
    };
  }

  async start(request: LaunchRequest): Promise<string> {
    const input = this.runTaskInput(
      undefined,
      EcsLauncher.containerEnvironment(request, this.config.identity),
      STARTED_BY,
      // Idempotent: an SDK retry of the same launch cannot start a second task.
      request.launchId.slice(0, 64),
      [
        { key: 'switchyard:session', value: request.sessionId.slice(0, 256) },
        { key: 'switchyard:launch', value: request.launchId.slice(0, 256) },
        { key: 'switchyard:backend', value: request.backend },
      ],
    );
    return this.runOne(input);
  }

  /**
   * One pooled runner (docs/DESIGN.md "Warm runner pool"): the same task definition, with the
   * pool's dial-in environment instead of a session's, tagged so an operator can tell pooled
   * tasks apart. No session id and no runner token travel here; the claim brings them later.
   */
  async startPooled(request: PoolLaunchRequest): Promise<string> {
    const env = poolLaunchEnvironment({
      poolUrl: request.poolUrl,
      poolToken: request.poolToken,
      backend: request.backend,
      runnerId: request.runnerId,
      idleMs: request.limits.idleMs,
      maxLifetimeMs: request.limits.maxLifetimeMs,
      model: request.model,
      ...(request.repositoryAllowLoopback === true && { repositoryAllowLoopback: true }),
      ...(this.config.identity !== null && { identity: this.config.identity.sts }),
    });
    const environment = Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }]));
    const input = this.runTaskInput(undefined, environment, STARTED_BY_POOL, request.runnerId.slice(0, 64), [
      { key: 'switchyard:pool', value: request.runnerId.slice(0, 256) },
      { key: 'switchyard:backend', value: request.backend },
    ]);
    return this.runOne(input);
  }

  private async runOne(input: ReturnType<EcsLauncher['runTaskInput']>): Promise<string> {
    const out = await this.call('RunTask', () => this.client.send(new RunTaskCommand(input)));
    const arn = out.tasks?.[0]?.taskArn;
    if (arn === undefined) {
      const f = out.failures?.[0];
      throw new Error(
        `ECS RunTask started no task: ${f?.reason ?? 'no reason given'}${f?.detail ? ` (${f.detail})` : ''}`,
      );
    }
    return arn;
  }

  async stop(ref: string, reason: string): Promise<void> {
    try {
      await this.client.send(
        new StopTaskCommand({ cluster: this.config.cluster, task: ref, reason: reason.slice(0, 255) }),
      );
    } catch (err) {
      // Idempotent: a task ECS no longer knows (stopped long ago, or never existed) is stopped.
      if (isTaskNotFound(err)) return;
      throw launchError('StopTask', err);
    }
  }

  async describe(ref: string): Promise<RunnerDescription> {
    const out = await this.call('DescribeTasks', () =>
      this.client.send(new DescribeTasksCommand({ cluster: this.config.cluster, tasks: [ref] })),
    );
    const task = out.tasks?.find((t) => t.taskArn === ref) ?? out.tasks?.[0];
    if (task === undefined) {
      const f = out.failures?.[0];
      return {
        state: 'unknown',
        reason: f?.reason === 'MISSING' ? 'ECS has no record of this task' : `ECS: ${f?.reason ?? 'no such task'}`,
      };
    }
    return describeTask(task, this.config.containerName);
  }

  verifyRunner(ref: string, runnerId: string, proof: RunnerIdentityProof | undefined): Promise<IdentityVerdict> {
    if (this.config.identity === null) return Promise.resolve({ ok: true });
    return verifyTaskIdentity(this.config.identity, ref, runnerId, proof, this.opts.fetch);
  }

  async probe(backend: Backend): Promise<ProbeResult> {
    switch (this.config.probeMode) {
      case 'off':
        return {
          available: false,
          reason: `probing is turned off (RUNNER_PROBE=off), so ${backend} cannot be verified`,
          fix: 'set RUNNER_PROBE=task (production) or host (local runner host)',
        };
      case 'host':
        return this.probeViaHost(backend);
      case 'task':
        return this.probeViaTask(backend);
    }
  }

  /**
   * Production probe: a one-off task of the same task definition whose command is
   * `probe --backend B`. Its exit code answers (0 usable, 1 unusable, 2 misconfigured); the full
   * JSON report is in the task's log. Takes a Fargate cold start (tens of seconds).
   */
  private async probeViaTask(backend: Backend): Promise<ProbeResult> {
    const input = this.runTaskInput(['probe', '--backend', backend], [], STARTED_BY_PROBE, undefined, [
      { key: 'switchyard:probe', value: backend },
    ]);
    const out = await this.call('RunTask', () => this.client.send(new RunTaskCommand(input)));
    const arn = out.tasks?.[0]?.taskArn;
    if (arn === undefined) {
      const f = out.failures?.[0];
      return {
        available: false,
        reason: `the ${backend} probe task did not start: ${f?.reason ?? 'no reason given'}`,
        fix: 'check the ECS_* launcher settings and the cluster capacity',
      };
    }
    const deadline = Date.now() + (this.opts.probeDeadlineMs ?? 180_000);
    const poll = this.opts.probePollMs ?? 2_000;
    for (;;) {
      const d = await this.describe(arn);
      if (d.state === 'stopped') {
        if (d.exitCode === 0) return { available: true };
        const why =
          d.exitCode === 1
            ? 'reported it unusable'
            : d.exitCode === 2
              ? 'found its configuration invalid'
              : `ended (${d.reason ?? 'no exit code'})`;
        return {
          available: false,
          reason: `the runner image's ${backend} probe ${why}${d.exitCode != null ? ` (exit ${d.exitCode})` : ''}`,
          fix: `read the probe report in the log of task ${arn} (it names what is missing), fix the runner image or its task definition, then retry`,
        };
      }
      if (d.state === 'unknown')
        return { available: false, reason: `the ${backend} probe task disappeared`, fix: 'retry' };
      if (Date.now() > deadline) {
        await this.stop(arn, 'switchyard: probe deadline passed').catch(() => {});
        return {
          available: false,
          reason: `the ${backend} probe task did not finish in time`,
          fix: 'check the cluster can start tasks, then retry',
        };
      }
      await new Promise((r) => setTimeout(r, poll));
    }
  }

  /** Dev probe: the local runner host runs `switchyard-runner probe` and returns its report. */
  private async probeViaHost(backend: Backend): Promise<ProbeResult> {
    if (this.config.endpoint === undefined) {
      return {
        available: false,
        reason: 'RUNNER_PROBE=host needs ECS_ENDPOINT (the local runner host)',
        fix: 'set ECS_ENDPOINT, or RUNNER_PROBE=task',
      };
    }
    // The host runs a process per probe: it takes only requests signed with the launcher's credentials.
    const res = await fetchSigned(
      new URL('/switchyard/probe', this.config.endpoint),
      { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ backend }) },
      this.config.credentials,
      { region: this.config.region, service: 'ecs', ...(this.opts.fetch && { fetch: this.opts.fetch }) },
    );
    if (!res.ok) throw new Error(`the runner host answered ${res.status} to the probe`);
    return probeResultFromReport(backend, (await res.json()) as unknown);
  }

  private async call<T>(op: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw launchError(op, err);
    }
  }
}

/** ECS task → the hub's view. STOPPED carries the runner container's exit code and ECS's reasons. */
export function describeTask(task: Task, containerName: string): RunnerDescription {
  const container = task.containers?.find((c) => c.name === containerName) ?? task.containers?.[0];
  switch (task.lastStatus) {
    case 'PROVISIONING':
    case 'PENDING':
    case 'ACTIVATING':
      return { state: 'pending' };
    case 'RUNNING':
      return task.desiredStatus === 'STOPPED'
        ? { state: 'running', reason: `stopping: ${task.stoppedReason ?? 'stop requested'}` }
        : { state: 'running' };
    case 'DEACTIVATING':
    case 'STOPPING':
    case 'DEPROVISIONING':
      return { state: 'running', reason: `stopping: ${task.stoppedReason ?? 'stop requested'}` };
    case 'STOPPED': {
      const parts = [task.stopCode, task.stoppedReason, container?.reason].filter(
        (x): x is string => typeof x === 'string' && x !== '',
      );
      return {
        state: 'stopped',
        exitCode: container?.exitCode ?? null,
        ...(parts.length > 0 && { reason: parts.join(': ') }),
      };
    }
    default:
      return { state: 'pending', reason: `ECS status ${task.lastStatus ?? 'unknown'}` };
  }
}

/** The runner's `probe` JSON (runner/src/probe.ts) → the edge's ProbeResult. */
export function probeResultFromReport(backend: Backend, answer: unknown): ProbeResult {
  const report = (answer as { report?: unknown } | null)?.report as
    | {
        backends?: {
          backend?: string;
          usable?: boolean;
          installed?: boolean;
          version?: string | null;
          credentials?: { present?: boolean };
          problems?: string[];
        }[];
      }
    | null
    | undefined;
  const r = report?.backends?.find((b) => b.backend === backend);
  if (!r)
    return {
      available: false,
      reason: `the runner's ${backend} probe printed no report`,
      fix: `run \`switchyard-runner probe --backend ${backend}\` and read its error`,
    };
  const version = typeof r.version === 'string' ? r.version.slice(0, 200) : undefined;
  if (r.usable === true) return { available: true, ...(version !== undefined && { version }) };
  const fix = !r.installed
    ? `install the pinned ${backend} CLI in the runner image (npm install in the runner package)`
    : r.credentials?.present === false
      ? 'give the runner a model: set SWITCHYARD_MODEL_URL (e.g. the offline model) or ANTHROPIC_API_KEY'
      : `run \`switchyard-runner probe --backend ${backend}\` in the runner image and fix what it reports`;
  return {
    available: false,
    ...(version !== undefined && { version }),
    reason: (r.problems ?? []).join('; ').slice(0, 2000) || `${backend} is not usable in the runner`,
    fix,
  };
}

function isTaskNotFound(err: unknown): boolean {
  return (
    err instanceof Error &&
    err.name === 'InvalidParameterException' &&
    /task was not found|not found/i.test(err.message)
  );
}

/** The SDK's error name and message only: never the request (it holds the runner token). */
function launchError(op: string, err: unknown): Error {
  const e = err instanceof Error ? err : new Error(String(err));
  return new Error(`ECS ${op} failed: ${e.name}: ${e.message}`.slice(0, 1000));
}

const NOT_CONFIGURED = (error: string): Launcher => ({
  start: () => Promise.reject(new Error(error)),
  verifyRunner: async () => ({ ok: false, error: { code: 'config_invalid', message: error, retryable: false } }),
  stop: () => Promise.reject(new Error(error)),
  describe: () => Promise.reject(new Error(error)),
  probe: async (backend) => ({
    available: false,
    reason: `${error}; ${backend} cannot be probed`,
    fix: 'set the ECS_* and AWS_* variables (README "Deploying runners (ECS)")',
  }),
});

/**
 * The `LauncherFactory` for the Worker: builds an ECS launcher from the env's vars and secrets.
 * Misconfiguration does not throw here; every call fails with a message naming the variables.
 */
export function ecsLauncherFromEnv(env: object, opts: EcsLauncherOptions = {}): Launcher {
  const loaded = loadEcsLauncherConfig(env);
  return loaded.ok ? new EcsLauncher(loaded.config, opts) : NOT_CONFIGURED(loaded.error);
}
