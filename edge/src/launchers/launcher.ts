import type { Backend, RunnerIdentityProof } from '@switchyard/protocol';
import type { ProbeResult } from '../settings/backend-probe.ts';
import type { IdentityVerdict } from './task-identity.ts';

// The seam between the SessionHub and whatever runs runner processes (DESIGN.md "Launchers").
// The hub owns the lifecycle (when to start, when to stop, what counts as dead); a launcher
// only starts, stops and reports on one runner per call. Implementations: the ECS launcher
// (AWS RunTask/StopTask/DescribeTasks; against the local runner host with an endpoint override
// in dev and tests) and test fakes. This file is the interface only.

/** What a runner needs to dial its hub; the launcher passes it to the runner process unchanged. */
export interface LaunchRequest {
  /** The session this runner serves (runner env `SWITCHYARD_SESSION_ID`). */
  sessionId: string;
  /** The session's pinned backend (runner env `SWITCHYARD_BACKEND`). */
  backend: Backend;
  /**
   * The runner link URL, `ws(s)://<edge>/internal/runner/connect` (runner env
   * `SWITCHYARD_HUB_URL`). The runner adds `?session=<sessionId>` itself.
   */
  hubUrl: string;
  /**
   * HMAC runner token scoped to this session and this launch, expiring (runner env
   * `SWITCHYARD_RUNNER_TOKEN`). It is the only per-session secret in the launch: pass it as a
   * container override / process env, never on a command line or in a log line. The hub
   * renews it over the link (`welcome.runnerToken`, `token` frames); the launcher never does.
   */
  runnerToken: string;
  /**
   * Unique per launch (a ULID). The launcher may use it as an idempotency key (ECS
   * `clientToken`, the `startedBy` tag) and as the runner id (`SWITCHYARD_RUNNER_ID`).
   */
  launchId: string;
  /** Model for the CLI, from settings `defaultModel[backend]`; null = the CLI's own default. */
  model: string | null;
  /**
   * The runner's own backstops (env `SWITCHYARD_IDLE_TIMEOUT`, `SWITCHYARD_MAX_LIFETIME`): the
   * hub stops an idle runner itself, these only bound a runner that lost its hub.
   */
  limits: { idleMs: number; maxLifetimeMs: number };
  /**
   * The deployment lets repositories be cloned from loopback hosts (runner env
   * `SWITCHYARD_REPOSITORY_ALLOW_LOOPBACK`; the local stack only, docs/DESIGN.md "Start from a repository").
   */
  repositoryAllowLoopback?: boolean;
  /**
   * The session has nothing to restore (runner env `SWITCHYARD_FRESH_SESSION`): no transcript, no
   * file ever committed to its durable workspace, no repository, approval mode `auto`. The runner
   * then starts its CLI while it dials the hub (docs/DESIGN.md "Runner behaviour (serve)").
   */
  fresh?: boolean;
  /**
   * A fresh session's runner with no message waiting for it, started ahead of its first message
   * (runner env `SWITCHYARD_WARM_UP`): its CLI takes its first turn before it counts as up
   * (docs/DESIGN.md "Starting ahead").
   */
  warmUp?: boolean;
}

/**
 * What the launcher knows about a runner it started.
 * - `pending`: accepted, not yet running (ECS PROVISIONING/PENDING, a process being spawned).
 * - `running`: the process/task is up (it may or may not have dialled the hub yet).
 * - `stopped`: it is gone; `exitCode`/`reason` say why when known.
 * - `unknown`: the launcher has no record of this ref (e.g. the local host restarted).
 */
export interface RunnerDescription {
  state: 'pending' | 'running' | 'stopped' | 'unknown';
  exitCode?: number | null;
  /** Human-readable, e.g. ECS `stoppedReason` or `killed by SIGKILL`. No secrets. */
  reason?: string;
}

export interface Launcher {
  /**
   * Starts one runner for `request.sessionId` and returns an opaque reference to it (an ECS
   * task ARN, a local task id). Throws when the runner cannot be started; the message is shown
   * to the session's viewers as the `failed` reason, so it must not contain secrets.
   * Must not wait for the runner to connect: the hub does that, with a deadline.
   */
  start(request: LaunchRequest): Promise<string>;
  /**
   * Stops the runner (best effort, idempotent: stopping a stopped or unknown ref succeeds).
   * The hub usually asks the runner to shut down over the link first and calls this after.
   */
  stop(ref: string, reason: string): Promise<void>;
  /** Reports the runner's state. Throws only when the launcher itself cannot be reached. */
  describe(ref: string): Promise<RunnerDescription>;
  /**
   * Whether the runner saying hello as `runnerId` with `proof` is the one `ref` refers to
   * (docs/DESIGN.md "Runner identity"). Asked before a launch's bootstrap token or a pool slot is
   * taken: whoever can read launch requests holds those tokens too. A launcher whose launch
   * requests nobody else can read may answer ok without a proof.
   */
  verifyRunner(ref: string, runnerId: string, proof: RunnerIdentityProof | undefined): Promise<IdentityVerdict>;
  /**
   * Optional: runs the runner image's `probe` mode for one backend (CLI present, version,
   * guard loads, config valid) and returns its report. When present, the edge wires it into
   * the backend switch (`createApp({ probeFor })`).
   */
  probe?(backend: Backend): Promise<ProbeResult>;
  /**
   * Optional: starts one runner for the warm pool (docs/DESIGN.md "Warm runner pool"). It dials
   * the pool coordinator instead of a hub and holds no session until it is claimed. A launcher
   * without it has no pool: every session starts cold.
   */
  startPooled?(request: PoolLaunchRequest): Promise<string>;
}

/** What a pooled runner needs before any session exists. */
export interface PoolLaunchRequest {
  /** `ws(s)://<edge>/internal/runner/pool` (runner env `SWITCHYARD_POOL_URL`). */
  poolUrl: string;
  /** Scoped to this runner id, good for one pool link; useless at a session hub. */
  poolToken: string;
  backend: Backend;
  /** Unique per pooled runner (a ULID): the runner id, and the RunTask idempotency key. */
  runnerId: string;
  model: string | null;
  /** The session limits current at launch; the runner counts them from its claim. */
  limits: { idleMs: number; maxLifetimeMs: number };
  /** As `LaunchRequest.repositoryAllowLoopback`: the session that claims it may clone a repository. */
  repositoryAllowLoopback?: boolean;
}

/** How the Worker and the hub obtain a launcher: built per call from the bindings/vars. */
export type LauncherFactory = (env: Env) => Launcher;
