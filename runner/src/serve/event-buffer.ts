import { runnerError, type Result } from '../errors.ts';

/**
 * One sequenced frame, already serialized: events are stored as their
 * `SequencedEvent` JSON (batched into an `events` frame on send), a transcript
 * as its complete `transcript` frame.
 */
export interface BufferedFrame {
  seq: number;
  kind: 'event' | 'transcript';
  json: string;
}

export interface BufferLimits {
  maxFrames: number;
  /** Counted as UTF-16 code units of the JSON, close enough to bytes for a bound. */
  maxBytes: number;
}

/**
 * Holds every sequenced frame until the hub acks it. Bounded: a push that
 * would exceed either limit fails, and the buffer stays failed, because a
 * stream with a hole in it is worse than a stream that stops (the session
 * fails loudly instead of dropping events silently).
 */
export class EventBuffer {
  private frames: BufferedFrame[] = [];
  private bytes = 0;
  private nextSeq = 1;
  private acked = 0;
  private overflowed = false;
  private readonly limits: BufferLimits;

  constructor(limits: BufferLimits) {
    this.limits = limits;
  }

  get lastSeq(): number {
    return this.nextSeq - 1;
  }
  get ackedSeq(): number {
    return this.acked;
  }
  get size(): number {
    return this.frames.length;
  }
  get byteSize(): number {
    return this.bytes;
  }
  get failed(): boolean {
    return this.overflowed;
  }

  /** Assigns the next seq and stores the frame `build(seq)` returns. */
  push(kind: BufferedFrame['kind'], build: (seq: number) => string): Result<number> {
    if (this.overflowed) return { ok: false, error: overflowError(this.limits) };
    const seq = this.nextSeq;
    const json = build(seq);
    if (this.frames.length + 1 > this.limits.maxFrames || this.bytes + json.length > this.limits.maxBytes) {
      this.overflowed = true;
      return { ok: false, error: overflowError(this.limits) };
    }
    this.nextSeq++;
    this.frames.push({ seq, kind, json });
    this.bytes += json.length;
    return { ok: true, value: seq };
  }

  /** Drops every frame up to `seq`. An ack beyond what was produced is a hub bug. */
  ack(seq: number): Result<number> {
    if (seq > this.lastSeq) {
      return {
        ok: false,
        error: runnerError('ack_beyond_last_seq', `hub acked seq ${seq} but the runner produced only ${this.lastSeq}`),
      };
    }
    if (seq <= this.acked) return { ok: true, value: 0 };
    let n = 0;
    while (n < this.frames.length && (this.frames[n]?.seq ?? Infinity) <= seq) {
      this.bytes -= this.frames[n]?.json.length ?? 0;
      n++;
    }
    this.frames.splice(0, n);
    this.acked = seq;
    return { ok: true, value: n };
  }

  /** Frames with a seq above `seq`, oldest first (what to (re)send). */
  after(seq: number): BufferedFrame[] {
    const i = this.frames.findIndex((f) => f.seq > seq);
    return i === -1 ? [] : this.frames.slice(i);
  }
}

function overflowError(limits: BufferLimits) {
  return runnerError(
    'buffer_overflow',
    `event buffer full (${limits.maxFrames} frames / ${limits.maxBytes} bytes unacked): the hub link has been down too long`,
  );
}
