import type { AgentEvent, ErrorInfo, RunnerStatus, RunnerToHub, SessionState } from '@switchyard/protocol';
import type { RunnerDescription } from '../launchers/launcher.ts';
import type { HubTimings } from './runtime.ts';
import type { HubLimits, HubSessionInfo } from './types.ts';

// The session hub's lifecycle rules, pure: the records the hub persists (one JSON row, so the
// object can be evicted at any time), the state a client sees, the next deadline, and what a
// tick or a bye decides. No clock (`now` is passed in), no I/O: session-hub.ts carries the
// decisions out, and test/unit/lifecycle.test.ts checks every rule in Node.

export interface LaunchRecord {
  id: string;
  ref: string | null;
  /**
   * `ref` is a pooled runner claimed for this launch: its bootstrap token went to it over its pool
   * link, which proved its task identity, and was in no launch request (docs/DESIGN.md "Runner
   * identity").
   */
  pooled?: boolean;
  startedAt: number;
  connectBy: number;
  hubUrl: string;
  /** First welcome; null while the runner has never connected. */
  welcomedAt: number | null;
  /** A welcomed runner socket is open. */
  connected: boolean;
  runnerId: string | null;
  /**
   * The runner that presented the bootstrap token first. Until the welcome, only it may present
   * that token again (a retry); after the welcome nobody may (the token is spent).
   */
  bootstrapRunnerId?: string | null;
  /**
   * Why the last hello with this launch's bootstrap token was refused for its task identity
   * (docs/DESIGN.md "Runner identity"): named when the launch fails before a first welcome, since a
   * misconfigured deployment refuses its own runners this way.
   */
  identityRefused?: string | null;
  /** The link dropped without a bye at this time; the runner has reconnectGrace to return. */
  disconnectedAt: number | null;
  nextPollAt: number | null;
  tokenRenewAt: number | null;
  stoppingSince: number | null;
  stopReason: string | null;
  turns: number;
  /**
   * The runner's CLI as the runner last said (its hello, then `status` frames). Absent: not said
   * (a runner from before the hello carried it), taken as up.
   */
  cli?: RunnerStatus['cli'] | null;
}

export interface TurnRecord {
  messageId: string;
  /** message.user was logged (the hub accepted the message). */
  announced: boolean;
  /** user_message went to a runner at least once. */
  sent: boolean;
  /** The runner answered `accepted`. */
  delivered: boolean;
  interruptQueued: boolean;
}

export interface Meta {
  session: HubSessionInfo | null;
  /** Where the session rests when no runner exists. */
  rest: { state: 'stopped' | 'failed'; reason: string };
  launch: LaunchRecord | null;
  turn: TurnRecord | null;
  limits: HubLimits;
  model: string | null;
  hubUrl: string | null;
  lastActivityAt: number;
  /** Last state logged as session.status. */
  shown: ShownState | null;
  transcript: { key: string; sha256: string; bytes: number; resumeId: string; storedAt: number } | null;
  lastEventId: string | null;
  /** Bytes of event JSON in the log, against `logMaxBytes`. */
  logBytes?: number;
  /** The log reached its cap: no more runner events are stored and no new message is taken. */
  logFull?: boolean;
}

interface ShownState {
  state: SessionState;
  reason: string | null;
}

export function freshMeta(): Meta {
  return {
    session: null,
    rest: { state: 'stopped', reason: 'no runner yet; the first message starts one' },
    launch: null,
    turn: null,
    limits: { idleMs: 15 * 60_000, maxLifetimeMs: 8 * 3_600_000 },
    model: null,
    hubUrl: null,
    lastActivityAt: 0,
    shown: null,
    transcript: null,
    lastEventId: null,
  };
}

export function newTurn(messageId: string): TurnRecord {
  return { messageId, announced: false, sent: false, delivered: false, interruptQueued: false };
}

export function newLaunch(id: string, hubUrl: string, now: number, t: HubTimings): LaunchRecord {
  return {
    id,
    ref: null,
    startedAt: now,
    connectBy: now + t.connectTimeoutMs,
    hubUrl,
    welcomedAt: null,
    connected: false,
    runnerId: null,
    disconnectedAt: null,
    nextPollAt: now + t.pollMs,
    tokenRenewAt: null,
    stoppingSince: null,
    stopReason: null,
    turns: 0,
  };
}

const CLI_STARTING = 'waiting for the agent CLI to start';

/** The state a client sees, derived from the records alone. */
export function deriveState(meta: Meta): ShownState {
  const { launch, turn } = meta;
  if (launch === null) return { state: meta.rest.state, reason: meta.rest.reason };
  if (launch.stoppingSince !== null) return { state: 'stopping', reason: launch.stopReason };
  if (launch.welcomedAt === null) return { state: 'starting', reason: null };
  if (turn !== null) return { state: 'busy', reason: null };
  // `ready` promises a prompt answer: a message now would wait for the CLI's start.
  if (launch.cli === 'starting') return { state: 'starting', reason: CLI_STARTING };
  return { state: launch.turns === 0 ? 'ready' : 'idle', reason: null };
}

/** The `session.status` event to log when the derived state differs from the last one shown. */
export function statusChange(meta: Meta): { shown: ShownState; event: AgentEvent } | null {
  const next = deriveState(meta);
  const shown = meta.shown;
  if (shown !== null && shown.state === next.state && shown.reason === next.reason) return null;
  return {
    shown: next,
    event: { type: 'session.status', state: next.state, ...(next.reason !== null && { reason: next.reason }) },
  };
}

/**
 * How long the current runner may sit without a turn before it is stopped, and the reason given.
 * A runner that has answered no message yet (started ahead of one that never came: an abandoned
 * draft) gets the shorter unused limit, so it does not hold a container and a runner slot as long
 * as a conversation between turns does.
 */
export function idleLimit(meta: Pick<Meta, 'launch' | 'limits'>): { ms: number; reason: string } {
  const { idleMs, unusedIdleMs } = meta.limits;
  const unused = meta.launch?.turns === 0 && unusedIdleMs !== undefined && unusedIdleMs < idleMs;
  const ms = unused ? unusedIdleMs : idleMs;
  return { ms, reason: `${unused ? 'unused' : 'idle'} for ${Math.round(ms / 60_000)} min` };
}

/** The next moment something must happen without outside input (null: nothing pending). */
export function nextDeadline(meta: Meta, t: HubTimings): number | null {
  const { launch, turn } = meta;
  if (launch === null) return null;
  const candidates: number[] = [];
  if (launch.stoppingSince !== null) candidates.push(launch.stoppingSince + t.stopGraceMs);
  if (launch.welcomedAt === null) candidates.push(launch.connectBy);
  if (launch.disconnectedAt !== null) candidates.push(launch.disconnectedAt + t.reconnectGraceMs);
  if (!launch.connected && launch.nextPollAt !== null) candidates.push(launch.nextPollAt);
  if (launch.connected && launch.tokenRenewAt !== null) candidates.push(launch.tokenRenewAt);
  if (launch.connected && launch.stoppingSince === null && turn === null) {
    candidates.push(meta.lastActivityAt + idleLimit(meta).ms);
    candidates.push(launch.startedAt + meta.limits.maxLifetimeMs);
  }
  return candidates.length === 0 ? null : Math.min(...candidates);
}

/**
 * What one tick does. `finish`, `fail` and `stop_runner` end the tick; `poll` (no runner
 * connected) asks the launcher about `ref` and then calls `exitedReason`; `renew_token` sends a
 * fresh credential and may be followed by `stop_runner`.
 */
type TickEffect =
  | { type: 'finish'; reason: string; lost: ErrorInfo }
  | { type: 'fail'; reason: string }
  | { type: 'poll'; ref: string | null; nextPollAt: number }
  | { type: 'renew_token' }
  | { type: 'stop_runner'; reason: string };

export function decideTick(meta: Meta, t: HubTimings, now: number): TickEffect[] {
  const launch = meta.launch;
  if (launch === null) return [];
  if (launch.stoppingSince !== null && now >= launch.stoppingSince + t.stopGraceMs) {
    return [
      {
        type: 'finish',
        reason: launch.stopReason ?? 'stopped',
        lost: { code: 'runner_stopped', message: 'the runner was stopped', retryable: true },
      },
    ];
  }
  if (launch.welcomedAt === null && now >= launch.connectBy) {
    return [
      {
        type: 'fail',
        reason: `the runner did not connect within ${Math.round(t.connectTimeoutMs / 1000)} s${refusalNote(launch)}`,
      },
    ];
  }
  if (launch.disconnectedAt !== null && now >= launch.disconnectedAt + t.reconnectGraceMs) {
    return [{ type: 'fail', reason: `the runner's link has been down for ${Math.round(t.reconnectGraceMs / 1000)} s` }];
  }
  if (!launch.connected) {
    // Renewal and the idle stop need a connected runner: polling is all there is to do.
    return launch.nextPollAt !== null && now >= launch.nextPollAt
      ? [{ type: 'poll', ref: launch.ref, nextPollAt: now + t.pollMs }]
      : [];
  }
  const effects: TickEffect[] = [];
  if (launch.tokenRenewAt !== null && now >= launch.tokenRenewAt) effects.push({ type: 'renew_token' });
  if (launch.stoppingSince === null && meta.turn === null) {
    const idle = idleLimit(meta);
    if (now >= meta.lastActivityAt + idle.ms) {
      effects.push({ type: 'stop_runner', reason: idle.reason });
    } else if (now >= launch.startedAt + meta.limits.maxLifetimeMs) {
      effects.push({ type: 'stop_runner', reason: 'reached the maximum session lifetime' });
    }
  }
  return effects;
}

/** After a poll: why the launch failed, or null while the runner may still connect. */
export function exitedReason(description: RunnerDescription, launch: LaunchRecord): string | null {
  if (launch.connected || (description.state !== 'stopped' && description.state !== 'unknown')) return null;
  const how =
    description.state === 'unknown'
      ? 'the launcher has no record of it'
      : [
          description.exitCode !== undefined && description.exitCode !== null
            ? `exit code ${description.exitCode}`
            : null,
          description.reason ?? null,
        ]
          .filter((x) => x !== null)
          .join(': ') || 'no reason given';
  const before = launch.welcomedAt === null ? 'before connecting' : 'after its link dropped';
  return `the runner exited ${before} (${how})${refusalNote(launch)}`;
}

/** What a launch that never got a welcome learnt from a refused identity proof, if anything. */
function refusalNote(launch: LaunchRecord): string {
  const refused = launch.welcomedAt === null ? (launch.identityRefused ?? null) : null;
  return refused === null ? '' : `; a hello with its token was refused: ${refused}`;
}

/** When the launch ends, an open turn gets a hub-made turn.done if a runner had it, or the launch failed. */
export function endsTurnWithLaunch(turn: TurnRecord | null, rest: 'stopped' | 'failed'): boolean {
  return turn !== null && (turn.sent || rest === 'failed');
}

/** A turn left unsent when the launch ended arrived while the old runner was stopping: it starts the next one. */
export function needsRelaunch(meta: Meta): boolean {
  return meta.launch === null && meta.turn !== null && !meta.turn.sent;
}

interface ByeOutcome {
  /** Events the runner sequenced that the hub never received (logged as `runner_events_lost`). */
  lostEvents: number;
  rest: 'stopped' | 'failed';
  reason: string;
  lost: ErrorInfo;
}

/** What a runner's bye means for the launch; `held` is the highest seq the hub stored for it. */
export function byeOutcome(
  bye: Extract<RunnerToHub, { type: 'bye' }>,
  held: number,
  stopReason: string | null,
): ByeOutcome {
  const failed = bye.reason === 'fatal' || bye.reason === 'buffer_overflow';
  const why = bye.error?.message ?? bye.reason;
  const reason = failed ? `the runner stopped: ${why}` : `runner stopped (${bye.reason.replaceAll('_', ' ')})`;
  return {
    lostEvents: Math.max(0, bye.lastSeq - held),
    rest: failed ? 'failed' : 'stopped',
    // A stop the hub asked for keeps its own reason.
    reason: !failed && stopReason ? stopReason : reason,
    lost: { code: 'runner_lost', message: `the runner stopped before the turn finished (${why})`, retryable: true },
  };
}

/**
 * Whether a batch of runner events closes the running turn: a `turn.done` tagged with its message
 * id, or untagged. The runner sends exactly one per accepted message; the hub makes its own only
 * when the runner cannot (`endTurn`), so the turn is cleared here to never add a second.
 */
export function closesTurn(
  turn: TurnRecord | null,
  events: Array<{ event: AgentEvent; messageId?: string | undefined }>,
): boolean {
  if (turn === null) return false;
  return events.some(
    (e) => e.event.type === 'turn.done' && (e.messageId === undefined || e.messageId === turn.messageId),
  );
}

/** Sequenced frames from a runner: a duplicate is dropped (and acked), a gap is a protocol error. */
export function checkSeq(held: number, seq: number): 'dup' | 'next' | 'gap' {
  if (seq <= held) return 'dup';
  return seq === held + 1 ? 'next' : 'gap';
}
