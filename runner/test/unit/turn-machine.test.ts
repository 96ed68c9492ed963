import { describe, expect, test } from 'vitest';
import type { AgentEvent } from '@switchyard/protocol';
import {
  TurnMachine,
  type MachineEffect,
  type MachineInput,
  type MachineTimings,
} from '../../src/serve/turn-machine.ts';
import { TIMINGS as T, effectsOf as of } from './turn-machine-fixtures.ts';

/** A machine driven to "ready, CLI running" with its effect log. */
function ready(timings: Partial<MachineTimings> = {}) {
  const m = new TurnMachine({ ...T, ...timings });
  const log: MachineEffect[] = [];
  const run = (input: MachineInput) => {
    const fx = m.handle(input);
    log.push(...fx);
    return fx;
  };
  run({ type: 'start' });
  run({ type: 'linked' });
  run({ type: 'cli_ready', gen: 1 });
  return { m, run, log };
}

const emitted = (fx: MachineEffect[]) => of(fx, 'emit').map((e) => e.event);
const turnDones = (fx: MachineEffect[]) => emitted(fx).filter((e) => e.type === 'turn.done');
const timerSet = (fx: MachineEffect[], name: string) => of(fx, 'set_timer').find((t) => t.name === name);
const ev = (gen: number, event: AgentEvent): MachineInput => ({ type: 'cli_event', gen, event });
const done = (stopReason: 'end_turn' | 'error' | 'interrupted', extra: object = {}): AgentEvent => ({
  type: 'turn.done',
  stopReason,
  ...extra,
});
const msg = (id: string): MachineInput => ({ type: 'user_message', messageId: id, message: { text: 'hi' } });

describe('TurnMachine', () => {
  test('start arms idle and max-lifetime; linking spawns the first CLI; ready when it answers', () => {
    const m = new TurnMachine(T);
    const started = m.handle({ type: 'start' });
    expect(timerSet(started, 'idle')?.ms).toBe(T.idleMs);
    expect(timerSet(started, 'max_lifetime')?.ms).toBe(T.maxLifetimeMs);
    expect(of(started, 'status')[0]?.status).toMatchObject({ state: 'starting', cli: 'stopped' });
    const linked = m.handle({ type: 'linked' });
    expect(of(linked, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 1 }]);
    expect(timerSet(linked, 'cli_start')).toBeDefined();
    const ready = m.handle({ type: 'cli_ready', gen: 1 });
    expect(of(ready, 'status')[0]?.status).toMatchObject({ state: 'ready', cli: 'running' });
    // A slow CLI start does not eat into the idle time.
    expect(timerSet(ready, 'idle')?.ms).toBe(T.idleMs);
  });

  test('a message is accepted and written; its events carry its id; turn.done ends it once and uploads', () => {
    const { run } = ready();
    const fx = run(msg('m1'));
    expect(of(fx, 'accepted')).toEqual([{ type: 'accepted', inReplyTo: 'm1' }]);
    expect(of(fx, 'write_message')[0]).toMatchObject({ gen: 1, message: { text: 'hi' } });
    expect(timerSet(fx, 'stall')?.ms).toBe(T.stallMs);
    expect(of(fx, 'clear_timer').some((t) => t.name === 'idle')).toBe(true);
    expect(of(run(ev(1, { type: 'text.delta', index: 0, text: 'a' })), 'emit')[0]).toMatchObject({ messageId: 'm1' });
    const end = run(ev(1, done('end_turn')));
    expect(of(end, 'emit')).toEqual([{ type: 'emit', event: done('end_turn'), messageId: 'm1' }]);
    expect(of(end, 'upload_transcript')).toEqual([{ type: 'upload_transcript', final: false }]);
    expect(timerSet(end, 'idle')).toBeDefined();
    // A stray second turn.done from the CLI is not a second end.
    expect(turnDones(run(ev(1, done('end_turn'))))).toEqual([]);
  });

  test('busy: a second message is rejected with a typed error; the same id again is a duplicate', () => {
    const { run } = ready();
    run(msg('m1'));
    expect(of(run(msg('m2')), 'reject')[0]?.error).toMatchObject({ code: 'busy', retryable: true });
    const dup = run(msg('m1'));
    expect(of(dup, 'accepted')).toEqual([{ type: 'accepted', inReplyTo: 'm1', duplicate: true }]);
    expect(of(dup, 'write_message')).toEqual([]);
    run(ev(1, done('end_turn')));
    expect(of(run(msg('m1')), 'accepted')[0]?.duplicate).toBe(true);
  });

  test("interrupt: the CLI's own interrupt first, an error outcome becomes interrupted", () => {
    const { run } = ready();
    expect(of(run({ type: 'interrupt', requestId: 'i0' }), 'reject')[0]?.error.code).toBe('no_turn');
    run(msg('m1'));
    const fx = run({ type: 'interrupt', requestId: 'i1' });
    expect(of(fx, 'cli_interrupt')).toEqual([{ type: 'cli_interrupt', gen: 1 }]);
    expect(timerSet(fx, 'interrupt_deadline')?.ms).toBe(T.interruptDeadlineMs);
    expect(of(fx, 'accepted')).toHaveLength(1);
    // A second interrupt is accepted but sends nothing new.
    expect(of(run({ type: 'interrupt', requestId: 'i2' }), 'cli_interrupt')).toEqual([]);
    const end = run(ev(1, done('error', { error: { code: 'error_during_execution', message: 'x', retryable: true } })));
    expect(turnDones(end)).toEqual([{ type: 'turn.done', stopReason: 'interrupted' }]);
  });

  test('interrupt escalation: past the deadline the group is killed; exactly one turn.done; next message spawns a fresh CLI', () => {
    const { run, log } = ready();
    run(msg('m1'));
    run({ type: 'interrupt', requestId: 'i1' });
    const fx = run({ type: 'timer', name: 'interrupt_deadline' });
    expect(of(fx, 'kill_cli')).toEqual([{ type: 'kill_cli', gen: 1 }]);
    expect(timerSet(fx, 'kill_deadline')).toBeDefined();
    // The codec closes the turn in end(), then the exit arrives.
    run(ev(1, done('interrupted')));
    run({ type: 'cli_exit', gen: 1, exit: { code: null, signal: 'SIGKILL', stderrHead: '' } });
    expect(turnDones(log)).toHaveLength(1);
    const next = run(msg('m2'));
    expect(of(next, 'spawn_cli')).toEqual([{ type: 'spawn_cli', gen: 2 }]);
    expect(of(next, 'write_message')[0]?.gen).toBe(2);
  });

  test('a CLI that never exits after SIGKILL is abandoned: the turn still ends, late events are dropped', () => {
    const { run, log } = ready();
    run(msg('m1'));
    run({ type: 'interrupt', requestId: 'i1' });
    run({ type: 'timer', name: 'interrupt_deadline' });
    const fx = run({ type: 'timer', name: 'kill_deadline' });
    expect(turnDones(fx)).toEqual([expect.objectContaining({ stopReason: 'interrupted' })]);
    expect(emitted(run(ev(1, { type: 'text.delta', index: 0, text: 'late' })))).toEqual([]);
    expect(turnDones(run(ev(1, done('end_turn'))))).toEqual([]);
    expect(turnDones(log)).toHaveLength(1);
  });

  test('watchdog: silence past the stall timeout stops the turn as cli_stalled; output re-arms it; tools and retries get longer', () => {
    const { run } = ready({ stallMs: 1000, toolStallMs: 9000 });
    run(msg('m1'));
    expect(timerSet(run({ type: 'cli_output', gen: 1 }), 'stall')?.ms).toBe(1000);
    run(ev(1, { type: 'tool.end', index: 0, toolId: 't1', name: 'Bash', input: {} }));
    expect(timerSet(run({ type: 'cli_output', gen: 1 }), 'stall')?.ms).toBe(9000);
    run(ev(1, { type: 'tool.result', toolId: 't1', isError: false, output: '' }));
    expect(timerSet(run({ type: 'cli_output', gen: 1 }), 'stall')?.ms).toBe(1000);
    expect(timerSet(run(ev(1, { type: 'turn.retry', attempt: 1, delayMs: 4000, reason: '529' })), 'stall')?.ms).toBe(
      5000,
    );
    const fx = run({ type: 'timer', name: 'stall' });
    expect(of(fx, 'cli_interrupt')).toHaveLength(1);
    const end = run(ev(1, done('interrupted')));
    expect(turnDones(end)[0]).toMatchObject({ stopReason: 'error', error: { code: 'cli_stalled', retryable: true } });
  });

  test('a CLI that dies mid-turn without closing it gets a turn.done with its stderr head', () => {
    const { run } = ready();
    run(msg('m1'));
    const fx = run({
      type: 'cli_exit',
      gen: 1,
      exit: { code: 3, signal: null, stderrHead: 'boom: out of memory\nmore' },
    });
    expect(turnDones(fx)[0]).toMatchObject({
      stopReason: 'error',
      error: { code: 'cli_exited', message: 'CLI exited with code 3: boom: out of memory' },
    });
    expect(of(fx, 'status').at(-1)?.status).toMatchObject({ state: 'ready', cli: 'stopped' });
    // Nothing restarts on its own.
    expect(of(fx, 'spawn_cli')).toEqual([]);
  });

  test('spawn failure ends the accepted turn with cli_spawn_failed', () => {
    const { run } = ready();
    run({ type: 'cli_exit', gen: 1, exit: { code: 1, signal: null, stderrHead: '' } });
    run(msg('m1'));
    const fx = run({
      type: 'cli_spawn_failed',
      gen: 2,
      error: { code: 'cli_spawn_failed', message: 'ENOENT', retryable: false },
    });
    expect(turnDones(fx)[0]).toMatchObject({ stopReason: 'error', error: { code: 'cli_spawn_failed' } });
  });

  test('a CLI that never becomes ready is killed; its turn ends cli_start_timeout', () => {
    const m = new TurnMachine(T);
    m.handle({ type: 'start' });
    m.handle({ type: 'linked' });
    m.handle(msg('m1'));
    const fx = m.handle({ type: 'timer', name: 'cli_start' });
    expect(of(fx, 'kill_cli')).toHaveLength(1);
    const end = m.handle(ev(1, done('error', { error: { code: 'cli_exited', message: 'x', retryable: true } })));
    expect(turnDones(end)[0]?.error?.code).toBe('cli_start_timeout');
  });

  test('idle never fires while the first CLI is still starting', () => {
    const m = new TurnMachine(T);
    m.handle({ type: 'start' });
    m.handle({ type: 'linked' });
    const fx = m.handle({ type: 'timer', name: 'idle' });
    expect(of(fx, 'close_cli_input')).toEqual([]);
    expect(timerSet(fx, 'idle')?.ms).toBe(T.idleMs);
  });

  test('idle: shutdown closes the CLI input, then finishes with a final upload and exit 0', () => {
    const { run } = ready();
    const fx = run({ type: 'timer', name: 'idle' });
    expect(of(fx, 'close_cli_input')).toHaveLength(1);
    expect(timerSet(fx, 'shutdown_deadline')?.ms).toBe(T.shutdownDeadlineMs);
    expect(of(run(msg('late')), 'reject')[0]?.error.code).toBe('stopping');
    const end = run({ type: 'cli_exit', gen: 1, exit: { code: 0, signal: null, stderrHead: '' } });
    expect(of(end, 'upload_transcript')).toEqual([{ type: 'upload_transcript', final: true }]);
    expect(of(end, 'finish')).toEqual([{ type: 'finish', reason: 'idle', exitCode: 0 }]);
  });

  test('graceful shutdown lets the turn finish for a while, then interrupts it', () => {
    const { run, log } = ready();
    run(msg('m1'));
    const fx = run({ type: 'shutdown', reason: 'signal', graceful: true });
    expect(timerSet(fx, 'shutdown_finish')?.ms).toBe(T.shutdownFinishMs);
    expect(of(fx, 'cli_interrupt')).toEqual([]);
    expect(of(run({ type: 'timer', name: 'shutdown_finish' }), 'cli_interrupt')).toHaveLength(1);
    const closed = run(ev(1, done('interrupted')));
    expect(of(closed, 'close_cli_input')).toHaveLength(1);
    run({ type: 'cli_exit', gen: 1, exit: { code: 0, signal: null, stderrHead: '' } });
    expect(of(log, 'finish')).toEqual([{ type: 'finish', reason: 'signal', exitCode: 0 }]);
    expect(turnDones(log)).toHaveLength(1);
  });

  test('a turn that completes during a graceful shutdown keeps its outcome', () => {
    const { run } = ready();
    run(msg('m1'));
    run({ type: 'shutdown', reason: 'max_lifetime', graceful: true });
    expect(turnDones(run(ev(1, done('end_turn'))))).toEqual([{ type: 'turn.done', stopReason: 'end_turn' }]);
  });

  test('the shutdown deadline stops hard: kill, a turn.done for the open turn, finish', () => {
    const { run, log } = ready();
    run(msg('m1'));
    run({ type: 'shutdown', reason: 'hub_shutdown', graceful: false });
    const fx = run({ type: 'timer', name: 'shutdown_deadline' });
    expect(of(fx, 'kill_cli')).toHaveLength(1);
    expect(turnDones(fx)).toEqual([expect.objectContaining({ stopReason: 'interrupted' })]);
    expect(of(fx, 'finish')).toHaveLength(1);
    expect(run(ev(1, done('end_turn')))).toEqual([]);
    expect(turnDones(log)).toHaveLength(1);
  });

  test('fatal (buffer overflow) kills the CLI at once and finishes with its exit code', () => {
    const { run, log } = ready();
    run(msg('m1'));
    const error = { code: 'buffer_overflow', message: 'full', retryable: false };
    const fx = run({ type: 'fatal', reason: 'buffer_overflow', error, exitCode: 4 });
    expect(of(fx, 'kill_cli')).toHaveLength(1);
    expect(turnDones(run(ev(1, done('interrupted'))))[0]).toMatchObject({ stopReason: 'error', error });
    run({ type: 'cli_exit', gen: 1, exit: { code: null, signal: 'SIGKILL', stderrHead: '' } });
    expect(of(log, 'finish')).toEqual([{ type: 'finish', reason: 'buffer_overflow', exitCode: 4, error }]);
  });
});
