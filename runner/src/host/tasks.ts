// Tasks of the local runner host: each one a runner process, started detached in its own
// process group with the environment ECS would give the container (the task definition's
// environment, then the container overrides, then what the ECS agent itself sets), and stopped
// the way ECS stops a container: SIGTERM, then SIGKILL to everything that is left once the stop
// timeout passes.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { arn, type EcsTask, type StopCode, type TaskStatus } from './ecs-api.ts';
import { descendants, exitCodeFor, killGroup, listProcs, liveInGroups, readProc } from './process-tree.ts';
import { forgetRunning, recordRunning } from './stale-tasks.ts';

export interface TaskManagerOptions {
  /** The "image entrypoint": the runner command and its leading arguments. */
  entrypoint: { command: string; args: string[] };
  /** The "task definition" environment every task starts from. */
  baseEnv: Record<string, string>;
  /** Per-task directories (workspace) and logs live here. */
  stateDir: string;
  /** SIGTERM → SIGKILL grace, like ECS `stopTimeout` (default 30 s). */
  stopTimeoutMs: number;
  /** Lifecycle lines for the operator (never the environment). */
  log?: (line: string) => void;
  /** How often running tasks' process trees are sampled. */
  sampleIntervalMs?: number;
  /**
   * Simulated provisioning: each task stays PROVISIONING this long before its process starts,
   * as a Fargate task waits for capacity and an image pull (docs/DESIGN.md "Warm runner pool").
   */
  provisionDelayMs?: number;
  /**
   * What the host itself sets in a task's environment, as the ECS agent does (the container
   * credentials endpoint): asked for as the task's process is spawned, applied over the overrides.
   */
  hostEnv?: (taskId: string) => Record<string, string>;
  /** Told once a task is STOPPED, so that what was issued for it (its credentials) dies with it. */
  onStopped?: (taskId: string) => void;
}

export interface RunSpec {
  region: string;
  cluster: string;
  taskDefinition: string;
  launchType: string;
  command: string[] | undefined;
  env: Record<string, string>;
  containerName: string;
  startedBy?: string;
  group?: string;
  tags?: { key: string; value?: string }[];
}

interface Task {
  id: string;
  spec: RunSpec;
  arn: string;
  containerArn: string;
  dir: string;
  logPath: string;
  createdAt: number;
  startedAt?: number;
  stoppingAt?: number;
  stoppedAt?: number;
  lastStatus: TaskStatus;
  desiredStatus: 'RUNNING' | 'STOPPED';
  stopCode?: StopCode;
  stoppedReason?: string;
  exitCode?: number;
  containerReason?: string;
  child?: ChildProcess;
  pid?: number;
  /** Every process group seen at or below the task's main process. */
  groups: Set<number>;
  killTimer?: NodeJS.Timeout;
  stopped: Promise<void>;
  markStopped: () => void;
}

export interface HostTaskSummary {
  taskArn: string;
  lastStatus: TaskStatus;
  desiredStatus: 'RUNNING' | 'STOPPED';
  command: string[];
  tags: Record<string, string>;
  sessionId: string | null;
  pid: number | null;
  groups: number[];
  exitCode: number | null;
  logPath: string;
}

const seconds = (ms: number) => ms / 1000;
/** A function, not an inline comparison: StopTask changes it while `launch` awaits. */
const stopRequested = (task: Task) => task.desiredStatus === 'STOPPED';

export class TaskManager {
  private readonly tasks = new Map<string, Task>();
  private readonly opts: TaskManagerOptions;
  private sampler: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(opts: TaskManagerOptions) {
    this.opts = opts;
    mkdirSync(join(opts.stateDir, 'logs'), { recursive: true });
  }

  get(id: string): Task | undefined {
    return this.tasks.get(id);
  }

  /** Starts a task; answers at once with it in PROVISIONING, as RunTask does. */
  run(spec: RunSpec): EcsTask {
    if (this.closing) throw new Error('the runner host is shutting down');
    const id = randomBytes(16).toString('hex');
    const dir = join(this.opts.stateDir, 'tasks', id);
    let markStopped!: () => void;
    const stopped = new Promise<void>((r) => (markStopped = r));
    const task: Task = {
      id,
      spec,
      arn: arn.task(spec.region, spec.cluster, id),
      containerArn: arn.container(spec.region, spec.cluster, id, randomUUID()),
      dir,
      logPath: join(this.opts.stateDir, 'logs', `${id}.log`),
      createdAt: Date.now(),
      lastStatus: 'PROVISIONING',
      desiredStatus: 'RUNNING',
      groups: new Set(),
      stopped,
      markStopped,
    };
    this.tasks.set(id, task);
    void this.launch(task);
    return this.view(task);
  }

  private async launch(task: Task): Promise<void> {
    const workspace = join(task.dir, 'workspace');
    let out: number | undefined;
    try {
      const delay = this.opts.provisionDelayMs ?? 0;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      mkdirSync(workspace, { recursive: true, mode: 0o700 });
      out = openSync(task.logPath, 'a', 0o600);
      const command = task.spec.command ?? ['serve'];
      if (stopRequested(task)) throw new Error('stopped before it started');
      // The task definition's environment, then the overrides, then the agent's; a runner's
      // default workspace is its cwd.
      const env = {
        ...this.opts.baseEnv,
        SWITCHYARD_WORKSPACE: workspace,
        ...task.spec.env,
        ...this.opts.hostEnv?.(task.id),
      };
      const { entrypoint } = this.opts;
      const child = spawn(entrypoint.command, [...entrypoint.args, ...command], {
        cwd: workspace,
        env,
        detached: true,
        stdio: ['ignore', out, out],
      });
      task.child = child;
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      task.pid = child.pid as number;
      task.groups.add(task.pid); // detached: the child leads a new group whose id is its pid
      task.startedAt = Date.now();
      if (task.lastStatus === 'PROVISIONING') task.lastStatus = 'RUNNING';
      this.persist(task);
      this.opts.log?.(`task ${task.id} RUNNING pid ${task.pid} (${command.join(' ')}); log ${task.logPath}`);
      child.once('exit', (code, signal) => void this.exited(task, code, signal));
      this.ensureSampler();
      // A StopTask that arrived while spawning.
      if (stopRequested(task)) this.signalStop(task);
    } catch (err) {
      task.lastStatus = 'STOPPED';
      task.desiredStatus = 'STOPPED';
      task.stopCode ??= 'TaskFailedToStart';
      task.stoppedAt = Date.now();
      const message = err instanceof Error ? err.message : String(err);
      task.stoppedReason ??= `CannotStartContainerError: ${message}`;
      task.containerReason = `CannotStartContainerError: ${message}`;
      this.opts.log?.(`task ${task.id} failed to start: ${message}`);
      this.cleanup(task);
      task.markStopped();
    } finally {
      if (out !== undefined) closeSync(out); // the child has its own copy
    }
  }

  /** StopTask: desired STOPPED, SIGTERM to the task's group, SIGKILL to everything after the timeout. */
  stop(id: string, reason: string | undefined): EcsTask {
    const task = this.tasks.get(id);
    if (!task) throw new Error('not found');
    if (task.desiredStatus !== 'STOPPED') {
      task.desiredStatus = 'STOPPED';
      task.stopCode = 'UserInitiated';
      task.stoppedReason = reason ?? 'Task stopped by user';
      task.stoppingAt = Date.now();
      if (task.pid !== undefined && task.lastStatus !== 'STOPPED') {
        task.lastStatus = 'STOPPING';
        this.signalStop(task);
      }
    }
    return this.view(task);
  }

  private signalStop(task: Task): void {
    this.sample(task);
    if (task.pid === undefined) return;
    this.opts.log?.(`task ${task.id} STOPPING (SIGTERM, SIGKILL in ${seconds(this.opts.stopTimeoutMs)} s)`);
    // Like `docker stop`: the main process gets SIGTERM (with its group, so a shell wrapper's
    // children hear it too); the CLI groups below it are the runner's to wind down.
    killGroup(task.pid, 'SIGTERM');
    task.killTimer ??= setTimeout(() => this.killAll(task, 'SIGKILL'), this.opts.stopTimeoutMs);
  }

  private killAll(task: Task, signal: NodeJS.Signals): void {
    this.sample(task);
    for (const pgid of task.groups) killGroup(pgid, signal);
  }

  private async exited(task: Task, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    task.exitCode = exitCodeFor(code, signal);
    if (signal !== null) task.containerReason = `killed by ${signal}`;
    // When a container's main process ends, everything else in it dies too.
    const deadline = Date.now() + 10_000;
    for (;;) {
      for (const pgid of task.groups) killGroup(pgid, 'SIGKILL');
      if (liveInGroups(task.groups).length === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (task.killTimer) clearTimeout(task.killTimer);
    task.lastStatus = 'STOPPED';
    task.desiredStatus = 'STOPPED';
    task.stoppedAt = Date.now();
    task.stopCode ??= 'EssentialContainerExited';
    task.stoppedReason ??= 'Essential container in task exited';
    this.opts.log?.(`task ${task.id} STOPPED exit ${task.exitCode ?? '?'} (${task.stoppedReason})`);
    this.cleanup(task);
    task.markStopped();
  }

  private cleanup(task: Task): void {
    this.opts.onStopped?.(task.id);
    forgetRunning(this.opts.stateDir, task.id);
    // A stopped container's filesystem is gone; its log stays for the operator.
    rmSync(task.dir, { recursive: true, force: true });
  }

  private persist(task: Task): void {
    if (task.pid === undefined) return;
    recordRunning(this.opts.stateDir, {
      id: task.id,
      pid: task.pid,
      startTime: readProc(task.pid)?.startTime ?? 0,
      groups: [...task.groups],
    });
  }

  /** Records the process groups currently below a task (the runner starts each CLI in its own). */
  private sample(task: Task, procs = listProcs()): void {
    if (task.pid === undefined || task.lastStatus === 'STOPPED') return;
    const before = task.groups.size;
    for (const p of descendants(task.pid, procs)) task.groups.add(p.pgid);
    if (task.groups.size !== before) this.persist(task);
  }

  private ensureSampler(): void {
    if (this.sampler) return;
    this.sampler = setInterval(() => {
      const live = [...this.tasks.values()].filter((t) => t.pid !== undefined && t.lastStatus !== 'STOPPED');
      if (live.length === 0) {
        clearInterval(this.sampler);
        this.sampler = undefined;
        return;
      }
      const procs = listProcs();
      for (const t of live) this.sample(t, procs);
    }, this.opts.sampleIntervalMs ?? 500);
    this.sampler.unref();
  }

  view(task: Task): EcsTask {
    const { region, cluster, taskDefinition, launchType, containerName } = task.spec;
    const t: EcsTask = {
      taskArn: task.arn,
      clusterArn: arn.cluster(region, cluster),
      taskDefinitionArn: arn.taskDefinition(region, taskDefinition),
      lastStatus: task.lastStatus,
      desiredStatus: task.desiredStatus,
      launchType,
      createdAt: seconds(task.createdAt),
      overrides: {
        containerOverrides: [
          {
            name: containerName,
            ...(task.spec.command !== undefined && { command: task.spec.command }),
            environment: Object.entries(task.spec.env).map(([name, value]) => ({ name, value })),
          },
        ],
      },
      containers: [
        {
          containerArn: task.containerArn,
          taskArn: task.arn,
          name: containerName,
          lastStatus: task.lastStatus,
          ...(task.exitCode !== undefined && { exitCode: task.exitCode }),
          ...(task.containerReason !== undefined && { reason: task.containerReason }),
          ...(task.pid !== undefined && { runtimeId: `${task.id}-${task.pid}` }),
        },
      ],
    };
    if (task.startedAt !== undefined) t.startedAt = seconds(task.startedAt);
    if (task.stoppingAt !== undefined) t.stoppingAt = seconds(task.stoppingAt);
    if (task.stoppedAt !== undefined) t.stoppedAt = seconds(task.stoppedAt);
    if (task.stopCode !== undefined && task.lastStatus === 'STOPPED') t.stopCode = task.stopCode;
    if (task.stoppedReason !== undefined && task.desiredStatus === 'STOPPED') t.stoppedReason = task.stoppedReason;
    if (task.spec.startedBy !== undefined) t.startedBy = task.spec.startedBy;
    if (task.spec.group !== undefined) t.group = task.spec.group;
    if (task.spec.tags !== undefined) t.tags = task.spec.tags;
    return t;
  }

  /** Test/inspection hook: the pid and every process group of a task. */
  processes(id: string): { pid: number | undefined; groups: number[] } | undefined {
    const t = this.tasks.get(id);
    return t && { pid: t.pid, groups: [...t.groups] };
  }

  /**
   * Every task the host knows, for operators and tests (`GET /switchyard/tasks`): where its
   * processes are, never its environment.
   */
  list(): HostTaskSummary[] {
    return [...this.tasks.values()].map((t) => ({
      taskArn: t.arn,
      lastStatus: t.lastStatus,
      desiredStatus: t.desiredStatus,
      command: t.spec.command ?? ['serve'],
      tags: Object.fromEntries((t.spec.tags ?? []).map((x) => [x.key, x.value ?? ''])),
      sessionId: t.spec.env.SWITCHYARD_SESSION_ID ?? null,
      pid: t.pid ?? null,
      groups: [...t.groups],
      exitCode: t.exitCode ?? null,
      logPath: t.logPath,
    }));
  }

  /** Resolves once the task is STOPPED. */
  async waitStopped(id: string): Promise<void> {
    await this.tasks.get(id)?.stopped;
  }

  /** Stops every task (SIGTERM, SIGKILL after `graceMs`) and waits until all are STOPPED. */
  async close(graceMs = this.opts.stopTimeoutMs): Promise<void> {
    this.closing = true;
    const live = [...this.tasks.values()].filter((t) => t.lastStatus !== 'STOPPED');
    for (const t of live) {
      if (t.desiredStatus !== 'STOPPED') this.stop(t.id, 'the runner host is shutting down');
      if (t.killTimer) clearTimeout(t.killTimer);
      t.killTimer = setTimeout(() => this.killAll(t, 'SIGKILL'), Math.min(graceMs, this.opts.stopTimeoutMs));
    }
    await Promise.all(live.map((t) => t.stopped));
    if (this.sampler) clearInterval(this.sampler);
  }
}
