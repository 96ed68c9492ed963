// The local stack `npm start` runs, as a function the end-to-end tests call too:
//   1. D1 migrations on the local database (`wrangler d1 migrations apply --local`, as db:migrate);
//   2. the dev admin (scripts/admin-create.ts; password from SWITCHYARD_ADMIN_PASSWORD, or
//      generated into <devDir>/dev-admin.json, mode 0600 — never printed);
//   3. the offline model, unless ANTHROPIC_API_KEY or SWITCHYARD_MODEL_URL is set;
//   4. the local runner host (`switchyard-runner host`), whose tasks get the model settings;
//   5. the edge under `wrangler dev` (through its API, edge-dev.ts: no inspector unless asked
//      for), its ECS launcher pointed at the host (endpoint override, the AWS credentials
//      generated for this start, which the host verifies every SigV4 signature against) and its
//      hub URL at itself; ready once /healthz answers.
// Every service runs in its own process group; stop() takes them all down.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { RUNNER_CONNECT_PATH } from '@switchyard/protocol';
import { hostFetch, claimStateDir, reapStaleTasks, type HostTaskSummary } from '@switchyard/runner/host';
import type { EdgeDevOptions } from './edge-dev.ts';
import {
  reapStaleServices,
  run,
  startService,
  stopService,
  killServicesNow,
  writeServiceRecords,
  type OutputSink,
  type Service,
} from './services.ts';
import { ROOT, WRANGLER_CONFIG } from './wrangler.ts';

const NODE = process.execPath;
const WRANGLER_BIN = path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js');
const RUNNER_BIN = path.join(ROOT, 'runner', 'bin', 'switchyard-runner.js');
const MODEL_BIN = path.join(ROOT, 'offline-model', 'bin', 'switchyard-offline-model.js');
const ADMIN_SCRIPT = path.join(ROOT, 'scripts', 'admin-create.ts');
const EDGE_DEV = path.join(ROOT, 'scripts', 'lib', 'edge-dev.ts');
/** wrangler.toml `[assets] directory`. */
export const WEB_DIST = path.join(ROOT, 'web', 'dist');

export interface StackOptions {
  /** Edge port on 127.0.0.1; default PORT or 8787; 0 picks a free one. */
  port?: number;
  /** Dev credentials, the runner host's task dirs and logs, the service records. Default `<repo>/.switchyard`. */
  devDir?: string;
  /** Local D1/DO/R2 state (`wrangler --persist-to`). Default `<repo>/.wrangler/state`, where plain `wrangler dev` looks. */
  persistTo?: string;
  /** Where model settings, PORT and SWITCHYARD_ADMIN_PASSWORD are read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
  adminUsername?: string;
  /** Service output, one line at a time. Default: prefixed lines on stderr. */
  output?: OutputSink;
  /** Progress messages for the operator. Default: stderr. */
  log?: (line: string) => void;
  /** Deadline for each service to get ready (2-core machines under load need generous ones). */
  readyTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace for runner tasks (the host's --stop-timeout). */
  taskStopTimeoutMs?: number;
  /** Simulated provisioning before each runner task starts (the host's --provision-delay; bench, pool tests). */
  provisionDelayMs?: number;
  /** Extra `wrangler dev --var NAME:VALUE`s (tests: shorter hub timeouts). */
  edgeVars?: Record<string, string>;
  /** Extra environment for the runner host and so for every runner task (tests: a fake CLI). */
  runnerEnv?: Record<string, string>;
  /** Aborting stops whatever has started and rejects. */
  signal?: AbortSignal;
  /**
   * Bundle the Worker once and serve that bundle (`wrangler dev --no-bundle`) instead of watching
   * edge/src: an edit made while the stack runs cannot restart the Worker mid-request. Tests use
   * it (other work changes the tree under them); `npm start` reloads on edits unless
   * SWITCHYARD_FROZEN_EDGE=1.
   */
  frozenEdge?: boolean;
  /** Open a DevTools inspector for the edge on this port (0: a free one); by default there is none. */
  inspectorPort?: number;
}

export interface Stack {
  /** `http://127.0.0.1:PORT` — the edge. */
  url: string;
  /**
   * Benches only: the same Worker where Miniflare serves it, without wrangler dev's proxy (another
   * workerd) in front; what a deployed edge has in place of that proxy is Cloudflare's own front.
   */
  edgeDirectUrl: string | undefined;
  port: number;
  /** What runners dial: `ws://127.0.0.1:PORT/internal/runner/connect`. */
  hubUrl: string;
  admin: { username: string; password: string; source: 'env' | 'generated' | 'file'; file?: string };
  /** The model endpoint runners use: the offline model's URL, SWITCHYARD_MODEL_URL, or undefined with ANTHROPIC_API_KEY. */
  modelUrl: string | undefined;
  /** Set when this stack runs the offline model (its `/_offline/*` admin routes are at this URL). */
  offlineModelUrl: string | undefined;
  /** The bearer token those `/_offline/*` routes require (generated per start). */
  offlineControlToken: string | undefined;
  /** The local runner host (ECS API stand-in). */
  hostUrl: string;
  /** The only credentials the runner host's ECS API accepts (SigV4), generated for this start; only its launch broker holds them. */
  hostCredentials: { accessKeyId: string; secretAccessKey: string };
  /** The launch broker in front of the host (the edge's ECS_ENDPOINT). */
  brokerUrl: string;
  hostStateDir: string;
  devDir: string;
  persistTo: string;
  services: Service[];
  /** The runner host's tasks (pid, process groups, session id, status) — e.g. to kill a runner mid-turn. */
  runners(): Promise<HostTaskSummary[]>;
  /** Resolves when any service exits without being asked to. */
  unexpectedExit: Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>;
  /** Stops the runner host (which stops its runners), then the edge and the model; idempotent. */
  stop(): Promise<void>;
}

const USERNAME = /^[A-Za-z0-9._-]{3,32}$/;

/** The launch settings the local edge sends and the local broker pins. */
export const LOCAL_LAUNCH_VARS = {
  ECS_CLUSTER: 'switchyard-local',
  ECS_TASK_DEFINITION: 'switchyard-runner',
  ECS_CONTAINER_NAME: 'runner',
  ECS_SUBNETS: 'subnet-local',
  ECS_SECURITY_GROUPS: 'sg-local',
  ECS_ASSIGN_PUBLIC_IP: 'DISABLED',
  AWS_REGION: 'us-east-1',
} as const;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function defaultOutput(): OutputSink {
  return (service, _stream, line) => {
    if (line.trim() !== '') process.stderr.write(`[${service}] ${line}\n`);
  };
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const output = opts.output ?? defaultOutput();
  const readyMs = opts.readyTimeoutMs ?? 120_000;
  const devDir = path.resolve(opts.devDir ?? path.join(ROOT, '.switchyard'));
  const persistTo = path.resolve(opts.persistTo ?? path.join(ROOT, '.wrangler', 'state'));
  const hostStateDir = path.join(devDir, 'host');
  const recordsFile = path.join(devDir, 'services.json');
  const username = opts.adminUsername ?? 'admin';
  if (!USERNAME.test(username))
    throw new Error(`admin username ${JSON.stringify(username)} must be 3-32 of [A-Za-z0-9._-]`);
  const requested = opts.port ?? Number(env.PORT ?? '8787');
  if (!Number.isInteger(requested) || requested < 0 || requested > 65535)
    throw new Error(`PORT must be a port number (got ${env.PORT})`);
  mkdirSync(devDir, { recursive: true, mode: 0o700 });
  mkdirSync(persistTo, { recursive: true });

  // One stack per state directory (two wrangler devs on one local D1 would fight); a holder
  // that is gone left its services behind, which are stopped here.
  const release = claimStateDir(path.join(devDir, 'owner.json'), `the dev directory ${devDir} (another npm start?)`);
  // A previous start that was SIGKILLed cannot have stopped its services or their runners.
  const stale = reapStaleServices(recordsFile);
  if (stale.length > 0) log(`stopped ${stale.join(', ')} left running by an earlier npm start`);
  const staleTasks = reapStaleTasks(hostStateDir);
  if (staleTasks > 0) log(`stopped ${staleTasks} runner task(s) left running by an earlier npm start`);

  // The admin password reaches admin-create on stdin only; no service inherits it.
  const { SWITCHYARD_ADMIN_PASSWORD: _adminPassword, ...serviceEnv } = env;
  const toolEnv: NodeJS.ProcessEnv = {
    ...serviceEnv,
    WRANGLER_SEND_METRICS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    NO_COLOR: '1',
  };
  const services: Service[] = [];
  let stopping = false;
  let stopped: Promise<void> | undefined;
  const aborted = () => {
    if (opts.signal?.aborted) throw new Error('npm start was interrupted');
  };

  const stop = (): Promise<void> => {
    stopping = true;
    stopped ??= (async () => {
      const host = services.find((s) => s.name === 'host');
      // The runner host first, while the edge and the model are still up: its runners get
      // SIGTERM, flush to the hub and say goodbye instead of waiting out their shutdown deadline
      // against a hub that is gone. A closing host refuses new RunTasks meanwhile.
      if (host)
        await stopService(host, (opts.taskStopTimeoutMs ?? 10_000) + 10_000).catch((e: unknown) => log(String(e)));
      await Promise.all(
        services.filter((s) => s !== host).map((s) => stopService(s, 10_000).catch((e: unknown) => log(String(e)))),
      );
      // Backstop: a host that died could not stop its tasks.
      reapStaleTasks(hostStateDir);
      writeFileSync(recordsFile, '[]\n', { mode: 0o600 });
      release();
    })();
    return stopped;
  };
  const onExit = () => killServicesNow(services);
  process.once('exit', onExit);

  const launch = async (name: string, command: string, args: string[], serviceEnv: NodeJS.ProcessEnv) => {
    aborted();
    const s = await startService(name, command, args, { env: serviceEnv, cwd: ROOT, output });
    services.push(s);
    writeServiceRecords(recordsFile, services);
    return s;
  };
  const jsonLine = <T>(line: string): T | undefined => {
    try {
      const v = JSON.parse(line) as unknown;
      return v !== null && typeof v === 'object' ? (v as T) : undefined;
    } catch {
      return undefined;
    }
  };

  // The web app is built before (npm start and `npm test` do it); building here would race
  // between stacks that tests start in parallel.
  if (!existsSync(path.join(WEB_DIST, 'index.html')))
    throw new Error(`the web app is not built (${WEB_DIST}): run npm run build:web`);

  try {
    // 1. Schema.
    log('applying D1 migrations to the local database ...');
    const d1 = ['d1', 'migrations', 'apply', 'DB', '--local', '--config', WRANGLER_CONFIG, '--persist-to', persistTo];
    const migrated = await run(NODE, [WRANGLER_BIN, ...d1], { env: toolEnv, cwd: ROOT });
    if (migrated.code !== 0)
      throw new Error(`D1 migrations failed (exit ${migrated.code}):\n${migrated.stderr || migrated.stdout}`);
    aborted();

    // 2. The dev admin.
    const admin = await ensureAdmin({ username, env, toolEnv, persistTo, devDir, log });
    aborted();

    // 3. The model.
    let modelUrl = env.SWITCHYARD_MODEL_URL || undefined;
    let offlineModelUrl: string | undefined;
    let offlineControlToken: string | undefined;
    if (!modelUrl && !env.ANTHROPIC_API_KEY) {
      // Its control routes show every session's prompts and script answers: token only.
      offlineControlToken = randomBytes(24).toString('base64url');
      const model = await launch('model', NODE, [MODEL_BIN, '--port', '0'], {
        ...serviceEnv,
        SWITCHYARD_OFFLINE_CONTROL_TOKEN: offlineControlToken,
      });
      const ready = await model.waitForLine((l) => jsonLine<{ url: string }>(l), readyMs, opts.signal);
      offlineModelUrl = modelUrl = ready.url;
      log(`offline model on ${ready.url} (no ANTHROPIC_API_KEY or SWITCHYARD_MODEL_URL set)`);
    } else {
      log(modelUrl ? `model: SWITCHYARD_MODEL_URL=${modelUrl}` : 'model: the provider, with ANTHROPIC_API_KEY');
    }

    // 4. The runner host: its tasks inherit the model settings (never the host's other env). Its
    // ECS API accepts only requests signed with this start's credentials (it runs what RunTask asks
    // for), which only its launch broker holds; the edge signs with the broker key, as in
    // production (docs/DESIGN.md "A leaked edge key running its own command").
    const hostCredentials = {
      accessKeyId: `AKIDSY${randomBytes(8).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(32).toString('base64url'),
    };
    const brokerKey = { accessKeyId: 'switchyard-edge-local', secretAccessKey: randomBytes(32).toString('base64url') };
    const port = requested === 0 ? await freePort() : requested;
    const url = `http://127.0.0.1:${port}`;
    // What the edge sends and the broker pins, from one place (wrangler.toml's dev values are
    // for a hand-run `wrangler dev`).
    const launchVars = {
      ...LOCAL_LAUNCH_VARS,
      RUNNER_IDENTITY: opts.edgeVars?.RUNNER_IDENTITY ?? 'sts',
    };
    const brokerConfig = path.join(devDir, 'broker.json');
    const writeBrokerConfig = (origins: string[]) =>
      writeFileSync(
        brokerConfig,
        `${JSON.stringify({ ...launchVars, HUB_ORIGIN: origins.join(','), ALLOW_LOOPBACK_REPOSITORIES: '1' })}\n`,
        { mode: 0o600 },
      );
    writeBrokerConfig([url]);
    const taskStop = `${opts.taskStopTimeoutMs ?? 10_000}ms`;
    const host = await launch(
      'host',
      NODE,
      [
        RUNNER_BIN,
        'host',
        '--port',
        '0',
        '--state-dir',
        hostStateDir,
        '--stop-timeout',
        taskStop,
        ...(opts.provisionDelayMs ? ['--provision-delay', `${opts.provisionDelayMs}ms`] : []),
        '--broker-config',
        brokerConfig,
      ],
      {
        ...serviceEnv,
        ...(modelUrl !== undefined && { SWITCHYARD_MODEL_URL: modelUrl }),
        ...opts.runnerEnv,
        SWITCHYARD_HOST_ACCESS_KEY_ID: hostCredentials.accessKeyId,
        SWITCHYARD_HOST_SECRET_ACCESS_KEY: hostCredentials.secretAccessKey,
        SWITCHYARD_HOST_BROKER_KEY_ID: brokerKey.accessKeyId,
        SWITCHYARD_HOST_BROKER_SECRET: brokerKey.secretAccessKey,
      },
    );
    const hostReady = await host.waitForLine(
      (l) => jsonLine<{ url: string; cluster: string; stsUrl: string; taskRoleArn: string; brokerUrl: string }>(l),
      readyMs,
      opts.signal,
    );
    log(`runner host on ${hostReady.url}`);

    // 5. The edge.
    const hubUrl = `ws://127.0.0.1:${port}${RUNNER_CONNECT_PATH}`;
    // Secrets go through an env file (0600), not the command line.
    const secretsFile = path.join(devDir, 'edge.env');
    const secrets = {
      AWS_ACCESS_KEY_ID: brokerKey.accessKeyId,
      AWS_SECRET_ACCESS_KEY: brokerKey.secretAccessKey,
      // Runner tokens signed with it only live as long as this stack.
      RUNNER_TOKEN_SECRET: randomBytes(32).toString('base64url'),
    };
    writeFileSync(
      secretsFile,
      `${Object.entries(secrets)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n')}\n`,
      { mode: 0o600 },
    );
    const vars: Record<string, string> = {
      ...launchVars,
      ECS_ENDPOINT: hostReady.brokerUrl,
      // The host stands in for STS and the task credentials too: runners prove their task identity.
      STS_ENDPOINT: hostReady.stsUrl,
      RUNNER_TASK_ROLE_ARN: hostReady.taskRoleArn,
      RUNNER_PROBE: 'host',
      RUNNER_HUB_URL: hubUrl,
      // Repositories may be cloned from loopback here (tests serve one); production config never sets it.
      REPOSITORY_ALLOW_LOOPBACK: '1',
      ...opts.edgeVars,
    };
    let bundle: string | undefined;
    if (opts.frozenEdge) {
      const outdir = path.join(devDir, 'edge-bundle');
      const built = await run(
        NODE,
        [WRANGLER_BIN, 'deploy', '--dry-run', '--outdir', outdir, '--config', WRANGLER_CONFIG],
        { env: toolEnv, cwd: ROOT },
      );
      if (built.code !== 0)
        throw new Error(`bundling the edge failed (exit ${built.code}):\n${built.stderr || built.stdout}`);
      bundle = path.join(outdir, 'index.js');
      aborted();
    }
    // No DevTools inspector unless asked for: it would let anything on loopback run code in the edge.
    const edgeOptions: EdgeDevOptions = {
      config: WRANGLER_CONFIG,
      ip: '127.0.0.1',
      port,
      persistTo,
      envFile: secretsFile,
      vars,
      ...(bundle !== undefined && { bundle }),
      ...(opts.inspectorPort !== undefined && { inspectorPort: opts.inspectorPort }),
    };
    const edge = await launch('edge', NODE, [EDGE_DEV, JSON.stringify(edgeOptions)], toolEnv);
    const edgeReady = edge.waitForLine(
      (l) => {
        const v = jsonLine<{ url?: unknown; direct?: unknown }>(l);
        return typeof v?.url === 'string' ? { direct: typeof v.direct === 'string' ? v.direct : undefined } : undefined;
      },
      readyMs,
      opts.signal,
    );
    edgeReady.catch(() => {}); // a failed start is reported by waitForHealth; awaited again below
    await waitForHealth(url, edge, readyMs, opts.signal);
    const { direct: edgeDirectUrl } = await edgeReady;
    // Benches send requests to Miniflare's own socket too, whose runners then dial that origin.
    if (edgeDirectUrl !== undefined) writeBrokerConfig([url, edgeDirectUrl]);
    for (const s of services) s.sample();
    writeServiceRecords(recordsFile, services);

    const unexpectedExit = new Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>(
      (resolve) => {
        for (const s of services) void s.exited.then((e) => !stopping && resolve({ name: s.name, ...e }));
      },
    );
    return {
      url,
      edgeDirectUrl,
      port,
      hubUrl,
      admin,
      modelUrl,
      offlineModelUrl,
      offlineControlToken,
      hostUrl: hostReady.url,
      hostCredentials,
      brokerUrl: hostReady.brokerUrl,
      hostStateDir,
      devDir,
      persistTo,
      services,
      async runners() {
        const res = await hostFetch(hostReady.url, '/switchyard/tasks', hostCredentials);
        return ((await res.json()) as { tasks: HostTaskSummary[] }).tasks;
      },
      unexpectedExit,
      async stop() {
        await stop();
        process.removeListener('exit', onExit);
      },
    };
  } catch (err) {
    await stop();
    process.removeListener('exit', onExit);
    throw err;
  }
}

async function waitForHealth(url: string, edge: Service, deadlineMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  let exited = false;
  void edge.exited.then(() => (exited = true));
  for (;;) {
    if (signal?.aborted) throw new Error('npm start was interrupted');
    if (exited) throw new Error('wrangler dev exited before the edge answered /healthz (its output is above)');
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      await res.body?.cancel();
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the edge did not answer ${url}/healthz within ${deadlineMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The dev admin, through scripts/admin-create.ts (so the hashing, SQL and file handling are the
 * same as `npm run admin:create`). SWITCHYARD_ADMIN_PASSWORD wins and is never written down;
 * otherwise the password in <devDir>/dev-admin.json is kept while the account exists, and a
 * new one is generated into that file (0600) when either is missing.
 */
async function ensureAdmin(o: {
  username: string;
  env: NodeJS.ProcessEnv;
  toolEnv: NodeJS.ProcessEnv;
  persistTo: string;
  devDir: string;
  log: (l: string) => void;
}): Promise<Stack['admin']> {
  const file = path.join(o.devDir, 'dev-admin.json');
  const query = await run(
    NODE,
    [
      WRANGLER_BIN,
      'd1',
      'execute',
      'DB',
      '--local',
      '--config',
      WRANGLER_CONFIG,
      '--persist-to',
      o.persistTo,
      '--json',
      '--command',
      `SELECT username FROM users WHERE username = '${o.username}' COLLATE NOCASE`,
    ],
    { env: o.toolEnv, cwd: ROOT },
  );
  if (query.code !== 0) throw new Error(`could not read the users table (exit ${query.code}):\n${query.stderr}`);
  const exists = query.stdout.includes(`"username"`);
  const create = async (input: string | undefined, reset: boolean) => {
    const args = [
      ADMIN_SCRIPT,
      '--username',
      o.username,
      '--persist-to',
      o.persistTo,
      ...(input === undefined ? ['--out', file] : []),
      ...(reset ? ['--reset'] : []),
    ];
    const r = await run(NODE, args, { env: o.toolEnv, cwd: ROOT, input: input ?? '' });
    if (r.code !== 0) throw new Error(`admin:create failed (exit ${r.code}): ${r.stderr.trim()}`);
  };

  const fromEnv = o.env.SWITCHYARD_ADMIN_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '') {
    await create(fromEnv, exists);
    o.log(`admin ${o.username}: password from SWITCHYARD_ADMIN_PASSWORD`);
    return { username: o.username, password: fromEnv, source: 'env' };
  }
  if (exists && existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { username?: string; password?: string };
      if (saved.username === o.username && typeof saved.password === 'string') {
        o.log(`admin ${o.username}: password in ${file}`);
        return { username: o.username, password: saved.password, source: 'file', file };
      }
    } catch {
      // unreadable: make a new one below
    }
  }
  // stdin must not be a TTY or admin-create would wait for it: an empty pipe means "generate".
  await create(undefined, exists);
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { password: string };
  o.log(`admin ${o.username}: new password generated into ${file} (mode 0600)`);
  return { username: o.username, password: saved.password, source: 'generated', file };
}
