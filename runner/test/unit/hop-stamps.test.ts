import { describe, expect, test } from 'vitest';
import type { AgentEvent } from '@switchyard/protocol';
import { HopStamps, wallNow } from '../../src/serve/hop-stamps.ts';

// Bench-only hop stamps (protocol's bench-hops.ts): what the runner records per event.

describe('HopStamps', () => {
  test('an event parsed from a chunk carries that chunk’s read time, then codec, then buffer, in order', () => {
    const hops = new HopStamps();
    const t0 = wallNow();
    hops.chunkRead();
    const a: AgentEvent = { type: 'text.delta', index: 0, text: 'a' };
    const b: AgentEvent = { type: 'text.delta', index: 0, text: 'b' };
    hops.eventParsed(a);
    hops.eventParsed(b);
    const ha = hops.buffered(a);
    const hb = hops.buffered(b);
    expect(ha).toBeDefined();
    expect(hb?.read).toBe(ha?.read);
    for (const h of [ha, hb]) {
      if (h === undefined) continue;
      expect(h.read).toBeGreaterThanOrEqual(t0);
      expect(h.codec).toBeGreaterThanOrEqual(h.read);
      expect(h.buffer).toBeGreaterThanOrEqual(h.codec);
    }
  });

  test('after a user_message, the turn’s events also carry when it arrived and when it reached the CLI', () => {
    const hops = new HopStamps();
    const before: AgentEvent = { type: 'text.delta', index: 0, text: 'before' };
    hops.chunkRead();
    hops.eventParsed(before);
    expect(hops.buffered(before)).not.toHaveProperty('userMessage');
    hops.userMessage('m1');
    hops.stdinWritten();
    hops.chunkRead();
    const e: AgentEvent = { type: 'text.delta', index: 0, text: 'x' };
    hops.eventParsed(e);
    const h = hops.buffered(e);
    expect(h?.userMessage).toBeLessThanOrEqual(h?.stdin ?? 0);
    expect(h?.stdin).toBeLessThanOrEqual(h?.read ?? 0);
  });

  test('the hub’s copy of a message the runner already has (after a claim, a resend) keeps the first arrival’s stamps', () => {
    const hops = new HopStamps();
    const delta = (text: string): AgentEvent => ({ type: 'text.delta', index: 0, text });
    hops.userMessage('m1');
    hops.stdinWritten();
    const first = delta('first');
    hops.chunkRead();
    hops.eventParsed(first);
    const stamped = hops.buffered(first);
    hops.userMessage('m1');
    const later = delta('later');
    hops.chunkRead();
    hops.eventParsed(later);
    const h = hops.buffered(later);
    expect(h?.userMessage).toBe(stamped?.userMessage);
    expect(h?.stdin).toBe(stamped?.stdin);
    // The next message is a new turn: its own arrival, not yet written to the CLI.
    hops.userMessage('m2');
    const next = delta('next');
    hops.chunkRead();
    hops.eventParsed(next);
    expect(hops.buffered(next)?.stdin).toBeUndefined();
  });

  test('an event no codec produced (the runner’s own turn.done, errors) has no stamps', () => {
    const hops = new HopStamps();
    hops.chunkRead();
    expect(hops.buffered({ type: 'turn.done', stopReason: 'end_turn' })).toBeUndefined();
  });
});
