import type { AgentEvent, RunnerHops } from '@switchyard/protocol';

// Bench only (SWITCHYARD_BENCH_HOPS=1; protocol's bench-hops.ts): the runner's stamps on each
// event. A runner without the flag holds no HopStamps, so the hot path pays one `undefined` check.

/** Wall-clock ms with sub-millisecond precision, comparable with the bench's stamp proxy. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

export class HopStamps {
  private readAt = 0;
  /** The current turn's way in: its user_message off the link, and written to the CLI. */
  private turn: { messageId: string; userMessage: number; stdin?: number } | undefined;
  /** Keyed by the codec's event object, which the turn machine hands to `emit` unchanged. */
  private readonly parsed = new WeakMap<AgentEvent, { read: number; codec: number }>();

  /**
   * A user_message arrived (over the link, or with a pooled runner's claim). The hub's copy of a
   * message the runner already has (after a claim, or resent after a reconnect) keeps the first
   * arrival's stamps.
   */
  userMessage(messageId: string): void {
    if (this.turn?.messageId === messageId) return;
    this.turn = { messageId, userMessage: wallNow() };
  }

  /** The turn's message was written to the CLI's stdin. */
  stdinWritten(): void {
    if (this.turn !== undefined) this.turn.stdin = wallNow();
  }

  /** A stdout chunk arrived; every event parsed from it was read now. */
  chunkRead(): void {
    this.readAt = wallNow();
  }

  /** The codec produced `event` from the current chunk. */
  eventParsed(event: AgentEvent): void {
    this.parsed.set(event, { read: this.readAt, codec: wallNow() });
  }

  /** The stamps of `event` as it enters the buffer; undefined for an event no codec made. */
  buffered(event: AgentEvent): RunnerHops | undefined {
    const p = this.parsed.get(event);
    if (p === undefined) return undefined;
    const turn = this.turn === undefined ? {} : { userMessage: this.turn.userMessage, stdin: this.turn.stdin };
    return { ...p, buffer: wallNow(), ...turn };
  }
}
