// `switchyard-runner host [--port N] [--state-dir DIR] [--stop-timeout 30s] [--provision-delay 30s]
// [--broker-config FILE]`: runs the local ECS stand-in until SIGINT/SIGTERM, then stops every task
// and exits. Prints exactly one JSON line on stdout once listening (`{"url", "port", "cluster",
// "stateDir", "stsUrl", "taskRoleArn", "brokerUrl"?}`), so a parent can wait for it; `stsUrl` and
// `taskRoleArn` are what the edge needs to check a runner's identity proof (the local STS
// stand-in, and the role whose callers are runners). ECS requests must be SigV4-signed with
// SWITCHYARD_HOST_ACCESS_KEY_ID / SWITCHYARD_HOST_SECRET_ACCESS_KEY (`npm start` generates them
// per start); without them a pair is generated into <state-dir>/credentials.json (0600). With
// `--broker-config`, a launch broker listens at `brokerUrl` in front of that API (host/broker.ts):
// it takes requests signed with SWITCHYARD_HOST_BROKER_KEY_ID / SWITCHYARD_HOST_BROKER_SECRET.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDuration } from '../config.ts';
import { ExitCode } from '../errors.ts';
import { claimStateDir } from './process-tree.ts';
import { startRunnerHost } from './server.ts';
import { reapStaleTasks } from './stale-tasks.ts';

const RUNNER_BIN = resolve(import.meta.dirname, '..', '..', 'bin', 'switchyard-runner.js');

/**
 * The "task definition" environment: what every runner process starts with before the
 * container overrides (hub URL, session, backend, token) are applied. Model access and runner
 * tuning pass through; the host's own secrets and unrelated variables do not.
 */
export function taskBaseEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const keep = new Set(['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TERM', 'TMPDIR', 'ANTHROPIC_API_KEY']);
  // Per-session values come only from the container overrides; the dev admin's password is not a runner's business.
  const never = new Set([
    'SWITCHYARD_HUB_URL',
    'SWITCHYARD_SESSION_ID',
    'SWITCHYARD_RUNNER_TOKEN',
    'SWITCHYARD_RUNNER_ID',
    'SWITCHYARD_BACKEND',
    'SWITCHYARD_POOL_URL',
    'SWITCHYARD_POOL_TOKEN',
    'SWITCHYARD_ADMIN_PASSWORD',
  ]);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (keep.has(k) || (k.startsWith('SWITCHYARD_') && !never.has(k) && !k.startsWith('SWITCHYARD_HOST_'))) out[k] = v;
  }
  return out;
}

export async function hostMode(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        port: { type: 'string' },
        'state-dir': { type: 'string' },
        'stop-timeout': { type: 'string' },
        'provision-delay': { type: 'string' },
        cluster: { type: 'string' },
        'broker-config': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`switchyard-runner host: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.usage;
  }
  const port = Number(values.port ?? '0');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`switchyard-runner host: bad --port ${values.port}\n`);
    return ExitCode.usage;
  }
  const stopTimeoutMs = values['stop-timeout'] === undefined ? 30_000 : parseDuration(values['stop-timeout']);
  if (stopTimeoutMs === undefined) {
    process.stderr.write('switchyard-runner host: --stop-timeout must be a duration such as 30s\n');
    return ExitCode.usage;
  }
  // Simulates Fargate's provisioning wait before each task starts (docs/DESIGN.md "Warm runner pool").
  const provisionDelayMs = values['provision-delay'] === undefined ? 0 : parseDuration(values['provision-delay']);
  if (provisionDelayMs === undefined) {
    process.stderr.write('switchyard-runner host: --provision-delay must be a duration such as 30s\n');
    return ExitCode.usage;
  }
  const stateDir = resolve(values['state-dir'] ?? mkdtempSync(join(tmpdir(), 'switchyard-host-')));
  const log = (line: string) =>
    process.stderr.write(
      `${JSON.stringify({ t: new Date().toISOString(), level: 'info', msg: line, component: 'host' })}\n`,
    );
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  let release: () => void;
  try {
    release = claimStateDir(join(stateDir, 'host.json'), `state directory ${stateDir}`);
  } catch (err) {
    process.stderr.write(`switchyard-runner host: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.usage;
  }
  const credentials = hostCredentials(process.env, stateDir, log);
  const broker = brokerKey(process.env);
  if (values['broker-config'] !== undefined && broker === undefined) {
    process.stderr.write(
      'switchyard-runner host: --broker-config needs SWITCHYARD_HOST_BROKER_KEY_ID and SWITCHYARD_HOST_BROKER_SECRET\n',
    );
    return ExitCode.usage;
  }
  const reaped = reapStaleTasks(stateDir);
  if (reaped > 0) log(`reaped ${reaped} task(s) left running by a previous host`);

  const host = await startRunnerHost({
    port,
    ...(values.cluster !== undefined && { cluster: values.cluster }),
    entrypoint: { command: process.execPath, args: [RUNNER_BIN] },
    baseEnv: taskBaseEnv(process.env),
    credentials,
    stateDir,
    stopTimeoutMs,
    provisionDelayMs,
    log,
    ...(values['broker-config'] !== undefined &&
      broker !== undefined && { broker: { configFile: resolve(values['broker-config']), edgeKey: broker } }),
  });

  const done = new Promise<number>((resolveDone) => {
    let closing = false;
    const stop = (signal: NodeJS.Signals) => {
      if (closing) return;
      closing = true;
      log(`${signal}: stopping every task`);
      host.close().then(
        () => {
          release();
          resolveDone(ExitCode.ok);
        },
        () => resolveDone(ExitCode.failed),
      );
    };
    // Handlers before the ready line: a parent may signal the moment it reads it.
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  const ready = {
    url: host.url,
    port: host.port,
    cluster: host.cluster,
    stateDir,
    stsUrl: host.stsUrl,
    taskRoleArn: host.taskRoleArn,
    ...(host.brokerUrl !== undefined && { brokerUrl: host.brokerUrl }),
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  return done;
}

/** The key the edge signs its launch requests with, taken out of the environment like the host's own. */
function brokerKey(env: NodeJS.ProcessEnv): { accessKeyId: string; secretAccessKey: string } | undefined {
  const accessKeyId = env.SWITCHYARD_HOST_BROKER_KEY_ID;
  const secretAccessKey = env.SWITCHYARD_HOST_BROKER_SECRET;
  delete env.SWITCHYARD_HOST_BROKER_KEY_ID;
  delete env.SWITCHYARD_HOST_BROKER_SECRET;
  return accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined;
}

/**
 * The one credential pair the host accepts, taken out of its environment (nothing it spawns may
 * inherit it; taskBaseEnv drops SWITCHYARD_HOST_* as well), or generated into the state dir.
 */
function hostCredentials(
  env: NodeJS.ProcessEnv,
  stateDir: string,
  log: (line: string) => void,
): { accessKeyId: string; secretAccessKey: string } {
  const accessKeyId = env.SWITCHYARD_HOST_ACCESS_KEY_ID;
  const secretAccessKey = env.SWITCHYARD_HOST_SECRET_ACCESS_KEY;
  delete env.SWITCHYARD_HOST_ACCESS_KEY_ID;
  delete env.SWITCHYARD_HOST_SECRET_ACCESS_KEY;
  if (accessKeyId && secretAccessKey) return { accessKeyId, secretAccessKey };
  const generated = {
    accessKeyId: `AKIDSY${randomBytes(8).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(32).toString('base64url'),
  };
  const file = join(stateDir, 'credentials.json');
  writeFileSync(file, `${JSON.stringify(generated)}\n`, { mode: 0o600 });
  log(`no SWITCHYARD_HOST_ACCESS_KEY_ID/SWITCHYARD_HOST_SECRET_ACCESS_KEY: sign requests with the pair in ${file}`);
  return generated;
}
