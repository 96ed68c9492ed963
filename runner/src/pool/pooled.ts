import { POOL_ONLY_ENV_NAMES, type PoolClaim } from '@switchyard/protocol/pool';
import { loadServeConfig, type ServeConfig } from '../config.ts';
import { ExitCode } from '../errors.ts';
import type { Logger } from '../log.ts';
import { compactHeap } from '../serve/heap-compaction.ts';
import type { SessionRunner } from '../serve/session-runner.ts';
import type { MachineInput } from '../serve/turn-types.ts';
import { PoolLink, type PoolWait } from './pool-link.ts';
import { rehearseParsers } from './rehearse-parsers.ts';

// `serve` in pooled mode (docs/DESIGN.md "Warm runner pool"): the runner is started before any
// session exists, with SWITCHYARD_POOL_URL and SWITCHYARD_POOL_TOKEN instead of a hub URL, a
// session id and a runner token. It prepares everything a session needs (config, sandbox, model
// proxy, CLI dirs) and starts its CLI, then waits on the pool link. A claim names the session;
// the runner then becomes an ordinary session runner for it and for nothing else.

/** What stands in for the session's fields until the claim: never sent to a hub. */
const UNCLAIMED_SESSION = '~pool';

export interface PoolMode {
  url: string;
  token: string;
  /** The environment `loadServeConfig` validates now: the pool URL and token in the session's places. */
  configEnv: Record<string, string | undefined>;
}

/** Pooled mode when SWITCHYARD_POOL_URL is set; null for an ordinary (session) launch. */
export function poolModeOf(env: Record<string, string | undefined>): PoolMode | null {
  const url = env.SWITCHYARD_POOL_URL;
  if (url === undefined || url === '') return null;
  const token = env.SWITCHYARD_POOL_TOKEN ?? '';
  return {
    url,
    token,
    // The pool URL goes through the hub URL's checks (ws only to loopback), the token through the token's.
    configEnv: {
      ...env,
      SWITCHYARD_HUB_URL: url,
      SWITCHYARD_SESSION_ID: UNCLAIMED_SESSION,
      SWITCHYARD_RUNNER_TOKEN: token,
    },
  };
}

/** Nothing spawned from here may inherit the pool token. */
export function forgetPoolSecrets(env: Record<string, string | undefined>): void {
  for (const name of POOL_ONLY_ENV_NAMES) delete env[name];
}

/**
 * The claim's session config: the same environment with the claim's hub URL, session id and
 * token, validated by the same rules as a launched runner's.
 */
export function claimedConfig(
  pool: PoolMode,
  claim: { hubUrl: string; sessionId: string; runnerToken: string },
  cwd: string,
): ReturnType<typeof loadServeConfig> {
  return loadServeConfig(
    {
      ...pool.configEnv,
      SWITCHYARD_HUB_URL: claim.hubUrl,
      SWITCHYARD_SESSION_ID: claim.sessionId,
      SWITCHYARD_RUNNER_TOKEN: claim.runnerToken,
    },
    cwd,
  );
}

/**
 * Prewarms the CLI, waits for a claim on the pool link, then serves the claimed session.
 * Returns the exit code: 0 when retired or stopped before a claim.
 */
export async function runPooled(
  runner: SessionRunner,
  pool: PoolMode,
  config: ServeConfig,
  log: Logger,
  o: {
    /** What `pool_hello` says besides the runner's config. */
    hello: { cliVersion: string | null; capabilities: import('@switchyard/protocol').Capabilities };
    /** The credential proxy, answering the CLI's warm-up itself until the claim. */
    model: { forwardUpstream(): void };
  },
): Promise<number> {
  // The CLI first: a runner in the pool is one whose CLI is up. If it stops while the runner
  // waits, the runner leaves the pool (the coordinator launches a replacement).
  let link: PoolLink | undefined;
  let lost = false;
  const ready = await runner.prewarm(() => {
    lost = true;
    link?.close('the prewarmed CLI stopped');
  });
  if (!ready) {
    log.error('pooled runner: the CLI did not start; leaving the pool', {});
    runner.killAllNow();
    return ExitCode.failed;
  }
  if (lost) return ExitCode.failed;
  link = new PoolLink({
    url: pool.url,
    token: pool.token,
    hello: {
      type: 'pool_hello',
      runnerId: config.runnerId,
      backend: config.backend,
      model: config.modelName ?? null,
      cliVersion: o.hello.cliVersion,
      capabilities: o.hello.capabilities,
    },
    identity: runner.identity,
    pingIntervalMs: config.link.pingIntervalMs,
    handshakeTimeoutMs: config.link.welcomeTimeoutMs,
    backoff: { baseMs: config.link.backoffBaseMs, maxMs: config.link.backoffMaxMs },
    log,
  });
  const stop = () => link.close('signal');
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // Prewarmed and dialling: from here the runner waits, so the parsers its claim will need are set
  // up now (rehearse-parsers.ts), and then its start's garbage goes back.
  void link.start().then(() => {
    const failed = rehearseParsers();
    if (failed.length > 0) log.error('pooled runner: a rehearsed frame did not parse', { failed });
    if (config.compactHeap) compactHeap(log, 'pool');
  });
  log.info('pooled runner waiting for a session', { backend: config.backend });
  const result: PoolWait = await link.result;
  process.off('SIGTERM', stop);
  process.off('SIGINT', stop);
  if (result.kind === 'ended') {
    log.info('pooled runner leaves the pool unclaimed', { code: result.code, reason: result.reason });
    runner.killAllNow();
    return lost ? ExitCode.failed : ExitCode.ok;
  }
  const claimed = claimedConfig(pool, result.claim, process.cwd());
  if (!claimed.ok) {
    log.error('pooled runner: the claim is not a usable session config', { ...claimed.error });
    runner.killAllNow();
    return ExitCode.usage;
  }
  log.redact(claimed.value.runnerToken);
  // Any launch may claim it. With nothing to restore the claim carries the first message and the
  // CLI it started is the session's conversation from then on; otherwise the welcome brings what
  // to restore and the CLI is replaced by one started after it (docs/DESIGN.md "Warm runner pool").
  const first = result.claim.first;
  log.info('pooled runner claimed', { sessionId: claimed.value.sessionId, firstMessage: first !== undefined });
  // Until now the model proxy answered the CLI's warm-up itself; the session's calls go upstream.
  o.model.forwardUpstream();
  runner.adopt({ ...claimed.value, runnerId: config.runnerId });
  const exit = runner.run();
  if (first !== undefined) runner.takeFirstMessage(firstMessageInputs(first));
  return exit;
}

/**
 * The turn machine's inputs for a first message that came with the claim (pure). The session is
 * linked in all but the socket: a claim carries the message only with nothing to restore, no
 * approval hook to add and an empty workspace (edge/src/pool/claim.ts `nothingToRestore`), which
 * is all a welcome could still bring before a message may reach the CLI. So the prewarmed CLI
 * takes the message now, while the hub link comes up.
 */
export function firstMessageInputs(first: NonNullable<PoolClaim['first']>): MachineInput[] {
  return [{ type: 'linked' }, { type: 'user_message', messageId: first.messageId, message: first.message }];
}
