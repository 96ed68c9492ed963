import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sandboxWalls } from '../capabilities.ts';
import { locateCli } from '../cli/locate.ts';
import { makeCliDirs } from '../cli/spawn.ts';
import { loadServeConfig } from '../config.ts';
import { ExitCode, messageOf } from '../errors.ts';
import { createLogger } from '../log.ts';
import { forgetPoolSecrets, poolModeOf, runPooled } from '../pool/pooled.ts';
import { startModelAccess } from '../sandbox/model-proxy.ts';
import { sandboxModeFrom } from '../sandbox/sandbox.ts';
import { HubLink } from './hub-link.ts';
import { SessionRunner } from './session-runner.ts';

/**
 * `switchyard-runner serve`: configuration, private CLI dirs, signals, and
 * the guarantee that the CLI's process group dies with the runner.
 */
export async function serve(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  // Pooled mode (docs/DESIGN.md "Warm runner pool"): no session yet; the claim brings it.
  const pool = poolModeOf(env);
  const loaded = loadServeConfig(pool?.configEnv ?? env, process.cwd());
  if (!loaded.ok) {
    process.stderr.write(`${JSON.stringify({ level: 'error', msg: 'invalid configuration', ...loaded.error })}\n`);
    return ExitCode.usage;
  }
  const config = loaded.value;
  // Nothing started from here on may inherit the token, whatever its env allow-list says.
  delete env.SWITCHYARD_RUNNER_TOKEN;
  forgetPoolSecrets(env);
  const log = createLogger({ level: config.logLevel, base: { runnerId: config.runnerId } });
  log.redact(config.runnerToken);
  const modelKey = config.model.kind === 'none' ? undefined : config.model.apiKey;
  if (modelKey) log.redact(modelKey);
  const mode = sandboxModeFrom(env);
  if (typeof mode !== 'string') {
    log.error('invalid configuration', { code: 'config_invalid', message: mode.error });
    return ExitCode.usage;
  }
  let executable;
  try {
    executable = config.executableOverride ?? locateCli(config.backend);
  } catch (err) {
    log.error('CLI not installed', { backend: config.backend, message: messageOf(err) });
    return ExitCode.usage;
  }
  // The link needs neither the sandbox nor the model: it is dialled while they are set up, and
  // says hello (with what the guard's self-test proved) only once the runner adopts it. Not for a
  // fresh session, whose CLI starts before the link is needed: loading the WebSocket client then
  // would only delay the CLI's spawn (docs/DESIGN.md "Runner behaviour (serve)").
  const early =
    pool === null && !config.freshSession
      ? HubLink.dial({
          url: config.hubUrl,
          sessionId: config.sessionId,
          token: config.runnerToken,
          welcomeTimeoutMs: config.link.welcomeTimeoutMs,
        })
      : undefined;
  // The guard's self-test runs beside the credential proxy's start and, for a session runner, the
  // CLI's start: the runner holds the CLI's input until it passed and kills the CLI if it failed
  // (docs/DESIGN.md "The guard"). A fresh session's runner starts it once its CLI was spawned
  // (SessionRunner.run): claude's is a Node process, pi's an import, and before the spawn either
  // would only take the CPU the spawn needs. The CLI talks to the proxy with a per-session key; the
  // real key stays in this process.
  const sandbox = sandboxWalls(env, [config.backend]);
  if (sandbox.ok && (pool !== null || !config.freshSession)) void sandbox.value.selfTest();
  // A pooled runner's CLI takes a warm-up turn before any session, and a fresh session's started
  // ahead of its first message before that message: the proxy answers it itself.
  const model = await startModelAccess(config.model, mode, {
    answerLocally: pool !== null || config.warmUp,
    // The person chatting reads only a plain summary (protocol's provider-errors.ts); this is the
    // operator's account of it.
    onUpstreamProblem: (problem) => log.warn('model call failed upstream', { ...problem }),
  });
  if (!sandbox.ok || !model.ok) {
    void early?.then((ws) => ws.terminate());
    if (model.ok) await model.value.close();
    log.error('invalid configuration', { ...(sandbox.ok ? (model.ok ? {} : model.error) : sandbox.error) });
    return ExitCode.usage;
  }
  const selfTest = sandbox.value.selfTest;
  // A pooled runner says what it can do when it registers, before any session: it waits.
  const pooledGuard = pool === null ? undefined : (await selfTest()).ok ? ('loaded' as const) : ('missing' as const);
  if (pooledGuard === 'missing') log.error('the tool-call guard failed its self-test; no CLI will be started', {});
  const capabilities = { ...sandbox.value.capabilities, ...(pooledGuard !== undefined && { guard: pooledGuard }) };

  const ownStateDir = config.stateDir === undefined;
  const stateDir = config.stateDir ?? (await mkdtemp(join(tmpdir(), 'switchyard-runner-')));
  const runner = new SessionRunner({
    config,
    log,
    capabilities,
    ...(pool === null && { selfTest }),
    launch: {
      backend: config.backend,
      executable,
      dirs: await makeCliDirs(stateDir, resolve(config.workspace)),
      model: model.value,
      walls: sandbox.value,
      modelName: config.modelName,
      retry: config.retry,
      compileCache: config.cliCompileCache,
      baseEnv: env,
    },
    ...(pool === null && config.warmUp && { forwardModelCalls: () => model.value.forwardUpstream() }),
    modelCallComing: () => model.value.prepareCall(),
  });
  const onSignal = (signal: NodeJS.Signals) => {
    log.info('signal', { signal });
    runner.shutdown('signal');
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('exit', () => runner.killAllNow());
  process.on('uncaughtException', (err) => {
    log.error('uncaught exception', { message: err.message, stack: err.stack });
    runner.killAllNow();
    process.exit(ExitCode.failed);
  });

  const code =
    pool === null
      ? await runner.run(early)
      : await runPooled(runner, pool, config, log, {
          hello: { cliVersion: executable.version, capabilities },
          model: model.value,
        });
  await model.value.close();
  if (ownStateDir) await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  return code;
}
