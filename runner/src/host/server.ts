// `switchyard-runner host`: the local stand-in for Amazon ECS. It serves the ECS API subset the
// edge's launcher uses (RunTask, StopTask, DescribeTasks; AWS JSON 1.1 on `POST /`), and the
// ListTasks the launch broker counts running tasks with, on loopback,
// so the production launcher runs unchanged against it with an endpoint override. Each task is
// a runner process (tasks.ts). Not ECS APIs: `POST /switchyard/probe` answers with the runner's
// `probe` report (the launcher's `host` probe mode), `GET /switchyard/tasks` lists the tasks with
// their pids and process groups (operators, e2e tests that kill a runner mid-turn).
//
// Every route but `/healthz` and the container credentials endpoint needs a valid SigV4
// signature made with the host's credentials (generated per `npm start`), and RunTask accepts
// only the per-session overrides the launcher sets: the host runs whatever a RunTask asks for as
// the developer, outside any sandbox.
//
// A runner proves which task it is with its task role's credentials (protocol's runner-identity),
// so the host also stands in for the two AWS pieces that takes: the container credentials
// endpoint (`GET /switchyard/credentials/<task id>`, authenticated by the per-task token the
// host puts in the task's environment; task-credentials.ts) and STS GetCallerIdentity on a
// second loopback listener (sts.ts), each faithful enough for the real AWS SDK.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BackendSchema, verifySigV4, type SigV4Credentials } from '@switchyard/protocol';
import { hostBroker } from './broker.ts';
import { stsListener, type RecordedStsRequest } from './sts.ts';
import { containerCredentialsEnv, CREDENTIALS_PATH, TaskCredentialStore } from './task-credentials.ts';
import {
  checkOverrides,
  clusterName,
  DescribeTasksInput,
  ListTasksInput,
  EcsError,
  invalidParameter,
  JSON_11,
  LOCAL_ACCOUNT,
  parseInput,
  LAUNCHER_OVERRIDES,
  RunTaskInput,
  StopTaskInput,
  TARGET_PREFIX,
  taskId,
} from './ecs-api.ts';
import { TaskManager } from './tasks.ts';
import { readBody } from '../http-body.ts';
import { killGroup } from '../process-group.ts';

export interface RecordedEcsRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The raw body text (what was signed). */
  rawBody: string;
  /** The parsed JSON body, or null. */
  body: unknown;
  target: string | undefined;
  status?: number;
}

export interface RunnerHostOptions {
  port?: number;
  /** Only the cluster of this name (or its ARN) exists; others answer ClusterNotFoundException. */
  cluster?: string;
  /** Task definition container name the overrides must address (ECS refuses unknown names). */
  containerName?: string;
  entrypoint: { command: string; args: string[] };
  baseEnv: Record<string, string>;
  /** The only credentials whose SigV4 signatures are accepted (the launcher's). */
  credentials: SigV4Credentials;
  /**
   * Environment names a RunTask container override may set. Default LAUNCHER_OVERRIDES (what
   * the edge's launcher sets); tests add the names their stand-in task reads.
   */
  overrideNames?: readonly string[];
  stateDir: string;
  stopTimeoutMs?: number;
  log?: (line: string) => void;
  /** Called for every request (tests assert on exactly what the SDK sent). */
  onRequest?: (r: RecordedEcsRequest) => void;
  /** Upper bound for one `probe` run. */
  probeTimeoutMs?: number;
  sampleIntervalMs?: number;
  /** Simulated Fargate provisioning before each task's process starts (TaskManagerOptions). */
  provisionDelayMs?: number;
  /** The task role every task's credentials belong to (default DEFAULT_TASK_ROLE_ARN). */
  taskRoleArn?: string;
  /** Called for every request to the STS stand-in. */
  onStsRequest?: (r: RecordedStsRequest) => void;
  /**
   * The launch broker in front of the ECS API, on its own listener (`brokerUrl`): the edge signs
   * with `edgeKey`, and only the broker holds `credentials`. Its settings are read from
   * `configFile` on every request (host/broker.ts).
   */
  broker?: { configFile: string; edgeKey: SigV4Credentials };
}

export interface RunnerHost {
  url: string;
  port: number;
  cluster: string;
  tasks: TaskManager;
  /** The STS stand-in's endpoint (`http://127.0.0.1:PORT/`): GetCallerIdentity for task credentials. */
  stsUrl: string;
  /** The role tasks' credentials belong to; their caller ARN is `…:assumed-role/<its name>/<task id>`. */
  taskRoleArn: string;
  /** The launch broker's endpoint, when the host runs one. */
  brokerUrl?: string;
  /** Stops every task (SIGTERM, then SIGKILL after the stop timeout), then both servers. */
  close(graceMs?: number): Promise<void>;
}

export const DEFAULT_TASK_ROLE_ARN = `arn:aws:iam::${LOCAL_ACCOUNT}:role/switchyard-local-runner`;
const DEFAULT_CLUSTER = 'switchyard-local';
const DEFAULT_CONTAINER = 'runner';
const MAX_BODY = 1024 * 1024;

export async function startRunnerHost(opts: RunnerHostOptions): Promise<RunnerHost> {
  const cluster = opts.cluster ?? DEFAULT_CLUSTER;
  const containerName = opts.containerName ?? DEFAULT_CONTAINER;
  const overrideNames = new Set(opts.overrideNames ?? LAUNCHER_OVERRIDES);
  const taskRoleArn = opts.taskRoleArn ?? DEFAULT_TASK_ROLE_ARN;
  const taskCredentials = new TaskCredentialStore({ roleArn: taskRoleArn });
  const sts = http.createServer(
    stsListener({
      credentials: taskCredentials,
      taskRoleArn,
      ...(opts.log && { log: opts.log }),
      ...(opts.onStsRequest && { onRequest: opts.onStsRequest }),
    }),
  );
  const tasks = new TaskManager({
    entrypoint: opts.entrypoint,
    baseEnv: opts.baseEnv,
    stateDir: opts.stateDir,
    stopTimeoutMs: opts.stopTimeoutMs ?? 30_000,
    ...(opts.log && { log: opts.log }),
    ...(opts.sampleIntervalMs !== undefined && { sampleIntervalMs: opts.sampleIntervalMs }),
    ...(opts.provisionDelayMs !== undefined && { provisionDelayMs: opts.provisionDelayMs }),
    // Tasks start only on a RunTask this server answered, so it is listening by then.
    hostEnv: (id) => containerCredentialsEnv(urlOf(server), id, taskCredentials.issue(id)),
    onStopped: (id) => taskCredentials.revoke(id),
  });

  const checkCluster = (ref: string | undefined) => {
    const name = clusterName(ref);
    if (name !== cluster) throw new EcsError(400, 'ClusterNotFoundException', 'Cluster not found.');
    return name;
  };

  const operations: Record<string, (body: unknown, region: string) => unknown> = {
    RunTask(body, region) {
      const input = parseInput(RunTaskInput, body);
      const name = checkCluster(input.cluster);
      if ((input.count ?? 1) !== 1) throw invalidParameter('count: the local runner host starts one task per call');
      if (input.launchType !== undefined && input.launchType !== 'FARGATE')
        throw invalidParameter('launchType: only FARGATE is served');
      const subnets = input.networkConfiguration?.awsvpcConfiguration.subnets ?? [];
      if (subnets.length === 0)
        throw invalidParameter("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
      const { env, command } = checkOverrides(input.overrides?.containerOverrides ?? [], containerName, overrideNames);
      const task = tasks.run({
        region,
        cluster: name,
        taskDefinition: input.taskDefinition,
        launchType: 'FARGATE',
        command,
        env,
        containerName,
        ...(input.startedBy !== undefined && { startedBy: input.startedBy }),
        ...(input.group !== undefined && { group: input.group }),
        ...(input.tags !== undefined && { tags: input.tags }),
      });
      return { tasks: [task], failures: [] };
    },
    StopTask(body) {
      const input = parseInput(StopTaskInput, body);
      checkCluster(input.cluster);
      const id = taskId(input.task);
      const task = id === undefined ? undefined : tasks.get(id);
      if (id === undefined || task === undefined) throw invalidParameter('The referenced task was not found.');
      return { task: tasks.stop(id, input.reason) };
    },
    DescribeTasks(body, region) {
      const input = parseInput(DescribeTasksInput, body);
      const name = checkCluster(input.cluster);
      const found = [];
      const failures = [];
      for (const ref of input.tasks) {
        const id = taskId(ref);
        const task = id === undefined ? undefined : tasks.get(id);
        if (task) found.push(tasks.view(task));
        else
          failures.push({
            arn: ref.startsWith('arn:') ? ref : `arn:aws:ecs:${region}:${LOCAL_ACCOUNT}:task/${name}/${ref}`,
            reason: 'MISSING',
          });
      }
      return { tasks: found, failures };
    },
    ListTasks(body) {
      const input = parseInput(ListTasksInput, body);
      checkCluster(input.cluster);
      // PENDING is a desired status ECS lists too; a local task is never desired PENDING.
      const wanted = input.desiredStatus ?? 'RUNNING';
      const arns = tasks
        .list()
        .filter((t) => t.desiredStatus === wanted)
        .map((t) => t.taskArn);
      const from = input.nextToken === undefined ? 0 : pageStart(input.nextToken);
      const to = from + (input.maxResults ?? 100);
      return { taskArns: arns.slice(from, to), ...(to < arns.length && { nextToken: pageToken(to) }) };
    },
  };

  const probe = async (body: unknown) => {
    const backend = BackendSchema.safeParse((body as { backend?: unknown } | null)?.backend);
    if (!backend.success) throw invalidParameter('backend: must be claude or pi');
    return runProbe(opts, backend.data, opts.probeTimeoutMs ?? 90_000);
  };

  const server = http.createServer((req, res) => {
    const answer = ({ body: raw, overflowed }: { body: Buffer; overflowed: boolean }) => {
      const rawBody = raw.toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      let body: unknown = null;
      try {
        body = rawBody === '' ? null : (JSON.parse(rawBody) as unknown);
      } catch {
        body = null;
      }
      const requestTarget = req.url ?? '/';
      const path = requestTarget.split('?')[0] ?? '/';
      const target = headers['x-amz-target'];
      const record: RecordedEcsRequest = { method: req.method ?? '', path, headers, rawBody, body, target };
      const send = (status: number, payload: unknown, contentType = JSON_11) => {
        record.status = status;
        opts.onRequest?.(record);
        const text = JSON.stringify(payload);
        res.writeHead(status, {
          'content-type': contentType,
          'content-length': Buffer.byteLength(text),
          'x-amzn-requestid': randomUUID(),
        });
        res.end(text);
      };
      const fail = (err: unknown) => {
        if (err instanceof EcsError) return send(err.status, { __type: err.type, message: err.message });
        opts.log?.(`internal error: ${err instanceof Error ? err.message : String(err)}`);
        send(500, { __type: 'ServerException', message: 'internal error in the local runner host' });
      };
      const route = async () => {
        if (overflowed) throw new EcsError(413, 'SerializationException', 'request body too large');
        if (req.method === 'GET' && path === '/healthz') return send(200, { ok: true }, 'application/json');
        // The task's own token authenticates it (no SigV4: the task has no host credentials).
        if (req.method === 'GET' && path.startsWith(CREDENTIALS_PATH)) {
          const served = taskCredentials.serve(path.slice(CREDENTIALS_PATH.length), headers.authorization);
          if (served.status === 200) return send(200, served.credentials, 'application/json');
          // The shape the SDK's container provider reads; nothing about the task or the token.
          const refused =
            served.status === 403
              ? { Code: 'AccessDenied', Message: 'Access denied' }
              : { Code: 'NotFound', Message: 'No credentials here' };
          return send(served.status, refused, 'application/json');
        }
        const known =
          (req.method === 'GET' && path === '/switchyard/tasks') ||
          (req.method === 'POST' && (path === '/switchyard/probe' || path === '/'));
        if (!known) throw new EcsError(404, 'UnknownOperationException', `no route for ${req.method} ${path}`);
        const auth = await verifySigV4(
          { method: req.method ?? '', target: requestTarget, headers, body: raw },
          opts.credentials,
          { service: 'ecs' },
        );
        if (!auth.ok) {
          opts.log?.(`refused ${req.method} ${path}: ${auth.type}`);
          throw new EcsError(
            auth.type === 'UnrecognizedClientException' || auth.type === 'InvalidSignatureException' ? 403 : 400,
            auth.type,
            auth.message,
          );
        }
        const { region } = auth;
        if (path === '/switchyard/tasks') return send(200, { tasks: tasks.list() }, 'application/json');
        if (path === '/switchyard/probe') return send(200, await probe(body), 'application/json');
        if (!(headers['content-type'] ?? '').startsWith(JSON_11)) {
          throw new EcsError(400, 'SerializationException', `Content-Type must be ${JSON_11}`);
        }
        const op = target?.startsWith(TARGET_PREFIX) ? operations[target.slice(TARGET_PREFIX.length)] : undefined;
        if (!op)
          throw new EcsError(
            400,
            'UnknownOperationException',
            `unsupported operation ${target ?? '(no X-Amz-Target)'}`,
          );
        if (body === null || typeof body !== 'object')
          throw new EcsError(400, 'SerializationException', 'body must be a JSON object');
        send(200, op(body, region));
      };
      route().catch(fail);
    };
    readBody(req, MAX_BODY).then(answer, () => res.destroy());
  });

  await listen(server, opts.port ?? 0);
  try {
    await listen(sts, 0);
  } catch (err) {
    await closeServer(server);
    throw err;
  }
  const broker =
    opts.broker &&
    http.createServer(
      hostBroker({
        ...opts.broker,
        upstream: opts.credentials,
        ecsUrl: urlOf(server),
        stsUrl: `${urlOf(sts)}/`,
        ...(opts.log && { log: opts.log }),
      }),
    );
  if (broker) {
    try {
      await listen(broker, 0);
    } catch (err) {
      await Promise.all([closeServer(server), closeServer(sts)]);
      throw err;
    }
  }
  return {
    url: urlOf(server),
    port: (server.address() as AddressInfo).port,
    cluster,
    tasks,
    stsUrl: `${urlOf(sts)}/`,
    taskRoleArn,
    ...(broker && { brokerUrl: urlOf(broker) }),
    async close(graceMs) {
      await tasks.close(graceMs);
      await Promise.all([closeServer(server), closeServer(sts), ...(broker ? [closeServer(broker)] : [])]);
    },
  };
}

/** ListTasks' `nextToken`: where the next page starts, opaque to callers as ECS's is. */
const pageToken = (start: number) => Buffer.from(`page:${start}`).toString('base64url');

function pageStart(token: string): number {
  const m = /^page:(\d{1,9})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (m === null) throw invalidParameter('nextToken: not a token this host gave');
  return Number(m[1]);
}

const urlOf = (server: http.Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

export interface HostProbeAnswer {
  exitCode: number | null;
  /** The runner's `probe` JSON report, or null when it printed none. */
  report: unknown;
  stderrHead?: string;
}

/** Runs `<entrypoint> probe --backend B` with the task environment and returns its report. */
async function runProbe(opts: RunnerHostOptions, backend: string, timeoutMs: number): Promise<HostProbeAnswer> {
  const child = spawn(opts.entrypoint.command, [...opts.entrypoint.args, 'probe', '--backend', backend], {
    cwd: opts.stateDir,
    env: { ...opts.baseEnv },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    if (stdout.length < MAX_BODY) stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 8192) stderr += d;
  });
  const timer = setTimeout(() => child.pid !== undefined && killGroup(child.pid, 'SIGKILL'), timeoutMs);
  const exitCode = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
  clearTimeout(timer);
  let report: unknown = null;
  const line = stdout.trim().split('\n').at(-1);
  if (line) {
    try {
      report = JSON.parse(line) as unknown;
    } catch {
      report = null;
    }
  }
  return { exitCode, report, ...(report === null && { stderrHead: stderr.slice(0, 2000) }) };
}
