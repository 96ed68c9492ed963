import { describe, expect, test } from 'vitest';
import {
  idleLimit,
  byeOutcome,
  checkSeq,
  closesTurn,
  decideTick,
  deriveState,
  endsTurnWithLaunch,
  exitedReason,
  freshMeta,
  needsRelaunch,
  newLaunch,
  newTurn,
  nextDeadline,
  statusChange,
  type Meta,
} from '../../src/hub/lifecycle.ts';
import type { HubTimings } from '../../src/hub/runtime.ts';

const T: HubTimings = {
  connectTimeoutMs: 180_000,
  reconnectGraceMs: 60_000,
  pollMs: 5_000,
  stopGraceMs: 30_000,
  tokenTtlMs: 1_800_000,
  replyTimeoutMs: 10_000,
  logMaxBytes: 256 * 1024 * 1024,
  ackDelayMs: 250,
};
const LIMITS = { idleMs: 15 * 60_000, maxLifetimeMs: 8 * 3_600_000 };
const T0 = 1_000_000;

/** A session with a launch started at T0 and nothing else. */
function launched(): Meta {
  const meta = freshMeta();
  meta.session = { id: 's', userId: 'u', backend: 'claude', title: null, createdAt: T0 };
  meta.limits = LIMITS;
  meta.lastActivityAt = T0;
  meta.launch = newLaunch('L1', 'ws://127.0.0.1/internal/runner/connect', T0, T);
  return meta;
}

/** A launch whose runner said hello at `at` and is connected. */
function welcomed(at = T0 + 1000): Meta {
  const meta = launched();
  const l = meta.launch!;
  l.welcomedAt = at;
  l.connected = true;
  l.runnerId = 'r1';
  l.nextPollAt = null;
  l.tokenRenewAt = at + T.tokenTtlMs / 2;
  meta.lastActivityAt = at;
  return meta;
}

describe('deriveState', () => {
  test('a new session rests stopped, saying the first message starts a runner', () => {
    expect(deriveState(freshMeta())).toEqual({
      state: 'stopped',
      reason: 'no runner yet; the first message starts one',
    });
  });

  test('starting until welcomed, then ready, busy with a turn, idle after one', () => {
    const meta = launched();
    expect(deriveState(meta).state).toBe('starting');
    meta.launch!.welcomedAt = T0;
    expect(deriveState(meta).state).toBe('ready');
    meta.turn = newTurn('m1');
    expect(deriveState(meta).state).toBe('busy');
    meta.turn = null;
    meta.launch!.turns = 1;
    expect(deriveState(meta).state).toBe('idle');
  });

  test('a welcomed runner whose CLI is still starting shows starting with that reason until the CLI is up; a turn shows busy', () => {
    const meta = welcomed();
    meta.launch!.cli = 'starting';
    expect(deriveState(meta)).toEqual({ state: 'starting', reason: 'waiting for the agent CLI to start' });
    meta.turn = newTurn('m1');
    expect(deriveState(meta).state).toBe('busy');
    meta.turn = null;
    meta.launch!.cli = 'running';
    expect(deriveState(meta)).toEqual({ state: 'ready', reason: null });
    // A CLI that stopped between turns is started again by the next message: nothing to wait for now.
    meta.launch!.cli = 'stopped';
    meta.launch!.turns = 1;
    expect(deriveState(meta)).toEqual({ state: 'idle', reason: null });
  });

  test('stopping wins over everything while a launch exists, with its reason', () => {
    const meta = welcomed();
    meta.turn = newTurn('m1');
    meta.launch!.stoppingSince = T0;
    meta.launch!.stopReason = 'idle for 15 min';
    expect(deriveState(meta)).toEqual({ state: 'stopping', reason: 'idle for 15 min' });
  });

  test('a turn waiting for a runner that has not said hello shows starting, not busy', () => {
    const meta = launched();
    meta.turn = newTurn('m1');
    expect(deriveState(meta).state).toBe('starting');
  });

  test('without a launch, the rest state and reason (failed keeps its reason)', () => {
    const meta = freshMeta();
    meta.rest = { state: 'failed', reason: 'the runner exited' };
    meta.turn = newTurn('m1');
    expect(deriveState(meta)).toEqual({ state: 'failed', reason: 'the runner exited' });
  });
});

describe('statusChange', () => {
  test('logs session.status only when state or reason changed', () => {
    const meta = launched();
    const first = statusChange(meta);
    expect(first?.event).toEqual({ type: 'session.status', state: 'starting' });
    meta.shown = first!.shown;
    expect(statusChange(meta)).toBeNull();
    meta.launch = null;
    meta.rest = { state: 'stopped', reason: 'a' };
    expect(statusChange(meta)?.event).toEqual({ type: 'session.status', state: 'stopped', reason: 'a' });
    meta.shown = { state: 'stopped', reason: 'a' };
    meta.rest.reason = 'b';
    expect(statusChange(meta)?.event).toEqual({ type: 'session.status', state: 'stopped', reason: 'b' });
  });
});

describe('nextDeadline', () => {
  test('none without a launch', () => {
    expect(nextDeadline(freshMeta(), T)).toBeNull();
  });

  test('a launch waiting for hello: the first poll, then the connect timeout bounds it', () => {
    const meta = launched();
    expect(nextDeadline(meta, T)).toBe(T0 + T.pollMs);
    meta.launch!.nextPollAt = null;
    expect(nextDeadline(meta, T)).toBe(T0 + T.connectTimeoutMs);
  });

  test('a connected idle runner: the earliest of token renewal, idle stop, max lifetime', () => {
    const meta = welcomed(T0);
    expect(nextDeadline(meta, T)).toBe(T0 + LIMITS.idleMs);
    meta.launch!.tokenRenewAt = T0 + 60_000;
    expect(nextDeadline(meta, T)).toBe(T0 + 60_000);
    meta.launch!.tokenRenewAt = null;
    meta.limits = { idleMs: LIMITS.maxLifetimeMs * 2, maxLifetimeMs: LIMITS.maxLifetimeMs };
    expect(nextDeadline(meta, T)).toBe(T0 + LIMITS.maxLifetimeMs);
  });

  test('idle and lifetime are not armed during a turn (checked between turns only)', () => {
    const meta = welcomed(T0);
    meta.launch!.tokenRenewAt = null;
    meta.turn = newTurn('m1');
    expect(nextDeadline(meta, T)).toBeNull();
  });

  test('a dropped link: the poll and the reconnect grace; stopping: the stop grace', () => {
    const meta = welcomed(T0);
    const l = meta.launch!;
    l.connected = false;
    l.disconnectedAt = T0 + 10;
    l.nextPollAt = null;
    expect(nextDeadline(meta, T)).toBe(T0 + 10 + T.reconnectGraceMs);
    l.connected = true;
    l.disconnectedAt = null;
    l.tokenRenewAt = null;
    l.stoppingSince = T0 + 20;
    expect(nextDeadline(meta, T)).toBe(T0 + 20 + T.stopGraceMs);
  });
});

describe('decideTick', () => {
  test('nothing without a launch, nothing before any deadline', () => {
    expect(decideTick(freshMeta(), T, T0)).toEqual([]);
    expect(decideTick(welcomed(T0), T, T0 + 1)).toEqual([]);
  });

  test('the stop grace passed: finish stopped with the stop reason', () => {
    const meta = welcomed(T0);
    meta.launch!.stoppingSince = T0;
    meta.launch!.stopReason = 'idle for 15 min';
    expect(decideTick(meta, T, T0 + T.stopGraceMs - 1)).toEqual([]);
    expect(decideTick(meta, T, T0 + T.stopGraceMs)).toEqual([
      {
        type: 'finish',
        reason: 'idle for 15 min',
        lost: { code: 'runner_stopped', message: 'the runner was stopped', retryable: true },
      },
    ]);
  });

  test('no hello by the connect deadline: the launch fails', () => {
    const meta = launched();
    meta.launch!.nextPollAt = null;
    expect(decideTick(meta, T, T0 + T.connectTimeoutMs)).toEqual([
      { type: 'fail', reason: 'the runner did not connect within 180 s' },
    ]);
  });

  test('a link down past the grace: the launch fails', () => {
    const meta = welcomed(T0);
    meta.launch!.connected = false;
    meta.launch!.disconnectedAt = T0;
    expect(decideTick(meta, T, T0 + T.reconnectGraceMs)).toEqual([
      { type: 'fail', reason: "the runner's link has been down for 60 s" },
    ]);
  });

  test('no runner connected: poll the launcher when the poll is due, and re-arm it', () => {
    const meta = launched();
    meta.launch!.ref = 'task-1';
    expect(decideTick(meta, T, T0 + T.pollMs - 1)).toEqual([]);
    expect(decideTick(meta, T, T0 + T.pollMs)).toEqual([
      { type: 'poll', ref: 'task-1', nextPollAt: T0 + 2 * T.pollMs },
    ]);
  });

  test('token renewal at half-life, and the idle stop in the same tick', () => {
    const meta = welcomed(T0);
    meta.lastActivityAt = T0 + 60_000;
    expect(decideTick(meta, T, T0 + T.tokenTtlMs / 2)).toEqual([{ type: 'renew_token' }]);
    expect(decideTick(meta, T, T0 + 60_000 + LIMITS.idleMs)).toEqual([
      { type: 'renew_token' },
      { type: 'stop_runner', reason: 'idle for 15 min' },
    ]);
  });

  test('a runner that has answered no message yet stops at the unused limit, then at the idle limit', () => {
    const meta = welcomed(T0);
    meta.launch!.tokenRenewAt = null;
    meta.lastActivityAt = T0;
    meta.limits = { ...LIMITS, unusedIdleMs: 5 * 60_000 };
    expect(idleLimit(meta)).toEqual({ ms: 5 * 60_000, reason: 'unused for 5 min' });
    expect(nextDeadline(meta, T)).toBe(T0 + 5 * 60_000);
    expect(decideTick(meta, T, T0 + 5 * 60_000 - 1)).toEqual([]);
    expect(decideTick(meta, T, T0 + 5 * 60_000)).toEqual([{ type: 'stop_runner', reason: 'unused for 5 min' }]);
    meta.launch!.turns = 1;
    expect(idleLimit(meta)).toEqual({ ms: LIMITS.idleMs, reason: 'idle for 15 min' });
    expect(nextDeadline(meta, T)).toBe(T0 + LIMITS.idleMs);
    expect(decideTick(meta, T, T0 + 5 * 60_000)).toEqual([]);
  });

  test('the lower of the two limits applies; a session stored without the unused limit keeps its idle one', () => {
    const meta = welcomed(T0);
    meta.limits = { idleMs: 2 * 60_000, unusedIdleMs: 5 * 60_000, maxLifetimeMs: LIMITS.maxLifetimeMs };
    expect(idleLimit(meta)).toEqual({ ms: 2 * 60_000, reason: 'idle for 2 min' });
    meta.limits = { ...LIMITS };
    expect(idleLimit(meta)).toEqual({ ms: LIMITS.idleMs, reason: 'idle for 15 min' });
  });

  test('max lifetime stops a runner that is never idle long enough', () => {
    const meta = welcomed(T0);
    meta.launch!.tokenRenewAt = null;
    meta.lastActivityAt = T0 + LIMITS.maxLifetimeMs - 1;
    expect(decideTick(meta, T, T0 + LIMITS.maxLifetimeMs)).toEqual([
      { type: 'stop_runner', reason: 'reached the maximum session lifetime' },
    ]);
  });

  test('a running turn is never stopped for idleness or lifetime; a stopping runner is not stopped twice', () => {
    const meta = welcomed(T0);
    meta.launch!.tokenRenewAt = null;
    meta.turn = newTurn('m1');
    expect(decideTick(meta, T, T0 + LIMITS.maxLifetimeMs * 2)).toEqual([]);
    meta.turn = null;
    meta.launch!.stoppingSince = T0 + LIMITS.maxLifetimeMs * 2;
    expect(decideTick(meta, T, T0 + LIMITS.maxLifetimeMs * 2)).toEqual([]);
  });
});

describe('exitedReason', () => {
  test('a running or pending runner, or a connected one, has not exited', () => {
    const meta = launched();
    expect(exitedReason({ state: 'running' }, meta.launch!)).toBeNull();
    expect(exitedReason({ state: 'pending' }, meta.launch!)).toBeNull();
    meta.launch!.connected = true;
    expect(exitedReason({ state: 'stopped', exitCode: 1 }, meta.launch!)).toBeNull();
  });

  test('names the exit code and reason, and whether it ever connected', () => {
    const meta = launched();
    expect(exitedReason({ state: 'stopped', exitCode: 2, reason: 'bad config' }, meta.launch!)).toBe(
      'the runner exited before connecting (exit code 2: bad config)',
    );
    expect(exitedReason({ state: 'stopped' }, meta.launch!)).toBe(
      'the runner exited before connecting (no reason given)',
    );
    meta.launch!.welcomedAt = T0;
    expect(exitedReason({ state: 'unknown' }, meta.launch!)).toBe(
      'the runner exited after its link dropped (the launcher has no record of it)',
    );
  });

  test('a launch that never got a welcome names the identity refusal it saw (a misconfigured role refuses its own runners)', () => {
    const meta = launched();
    meta.launch!.identityRefused = 'the identity proof is not of the task this launch started';
    expect(exitedReason({ state: 'stopped', exitCode: 3 }, meta.launch!)).toBe(
      'the runner exited before connecting (exit code 3); a hello with its token was refused: the identity proof is not of the task this launch started',
    );
    expect(decideTick(meta, T, meta.launch!.connectBy)).toEqual([
      {
        type: 'fail',
        reason:
          'the runner did not connect within 180 s; a hello with its token was refused: the identity proof is not of the task this launch started',
      },
    ]);
    // Once a runner was welcomed, an earlier refusal was someone else's: not the reason it ended.
    meta.launch!.welcomedAt = T0;
    expect(exitedReason({ state: 'stopped', exitCode: 3 }, meta.launch!)).toBe(
      'the runner exited after its link dropped (exit code 3)',
    );
  });
});

describe('the end of a launch', () => {
  test('a turn a runner had ends with the launch; an unsent one ends only when the launch failed', () => {
    expect(endsTurnWithLaunch(null, 'failed')).toBe(false);
    const turn = newTurn('m1');
    expect(endsTurnWithLaunch(turn, 'stopped')).toBe(false);
    expect(endsTurnWithLaunch(turn, 'failed')).toBe(true);
    turn.sent = true;
    expect(endsTurnWithLaunch(turn, 'stopped')).toBe(true);
  });

  test('an unsent turn left without a launch starts the next runner', () => {
    const meta = freshMeta();
    expect(needsRelaunch(meta)).toBe(false);
    meta.turn = newTurn('m1');
    expect(needsRelaunch(meta)).toBe(true);
    meta.turn.sent = true;
    expect(needsRelaunch(meta)).toBe(false);
    meta.turn.sent = false;
    meta.launch = launched().launch;
    expect(needsRelaunch(meta)).toBe(false);
  });

  test('bye: a clean reason keeps the stop the hub asked for; fatal fails with the runner error; missing seqs are counted', () => {
    expect(byeOutcome({ type: 'bye', reason: 'idle', lastSeq: 4 }, 4, null)).toEqual({
      lostEvents: 0,
      rest: 'stopped',
      reason: 'runner stopped (idle)',
      lost: { code: 'runner_lost', message: 'the runner stopped before the turn finished (idle)', retryable: true },
    });
    expect(byeOutcome({ type: 'bye', reason: 'hub_shutdown', lastSeq: 4 }, 4, 'idle for 15 min').reason).toBe(
      'idle for 15 min',
    );
    const fatal = byeOutcome(
      {
        type: 'bye',
        reason: 'buffer_overflow',
        lastSeq: 9,
        error: { code: 'buffer_overflow', message: 'too much', retryable: false },
      },
      6,
      'idle for 15 min',
    );
    expect(fatal).toMatchObject({ lostEvents: 3, rest: 'failed', reason: 'the runner stopped: too much' });
  });
});

describe('checkSeq (the sequence ledger)', () => {
  test('at or below what is held is a duplicate, the next is taken, anything beyond is a gap', () => {
    expect(checkSeq(5, 5)).toBe('dup');
    expect(checkSeq(5, 1)).toBe('dup');
    expect(checkSeq(5, 6)).toBe('next');
    expect(checkSeq(5, 7)).toBe('gap');
    expect(checkSeq(0, 1)).toBe('next');
  });
});

describe('closesTurn (exactly one turn.done per message)', () => {
  const done = { type: 'turn.done', stopReason: 'end_turn' } as const;
  test('a turn.done for the running turn, or without a messageId, closes it', () => {
    expect(closesTurn(newTurn('m1'), [{ event: done, messageId: 'm1' }])).toBe(true);
    expect(
      closesTurn(newTurn('m1'), [
        { event: { type: 'text.delta', index: 0, text: 'x' }, messageId: 'm1' },
        { event: done },
      ]),
    ).toBe(true);
  });

  test("another message's turn.done, other events, or no turn at all close nothing", () => {
    expect(closesTurn(newTurn('m2'), [{ event: done, messageId: 'm1' }])).toBe(false);
    expect(closesTurn(newTurn('m1'), [{ event: { type: 'text.delta', index: 0, text: 'x' }, messageId: 'm1' }])).toBe(
      false,
    );
    expect(closesTurn(null, [{ event: done, messageId: 'm1' }])).toBe(false);
  });
});
