// Frames the hub sends to a viewer socket (the Worker invocation that holds one SSE response).
// The hub renders the SSE bytes once per batch and every viewer's Worker writes them as they are:
// per viewer and event, the hub does one socket send and the Worker one stream write, with no
// JSON parse or re-encode in between. A frame is binary, little-endian:
//
//   u8 kind                       1 = events, 2 = presence
//   events:   u32 n, n × (u8 id length, id in ASCII, u32 start of its SSE block in the body),
//             u32 m, m × u32 body offset of a hop-stamp slot (bench only, else m = 0), body
//   presence: body
//
// The body is SSE text in UTF-8. An event's block is `id:`, `event:`, `data:` (`data` is the
// event's JSON exactly as stored) and, bench only, a `: hops` comment before it that ends in a slot
// where the Worker puts its own write time. The ids let the Worker skip what its client already has
// (a block at or below its cursor) by slicing the body, never by reading it. A presence body is
// one `event: presence` block without an id, so it never moves a client's Last-Event-ID.

import { type DeliveryHops, type Presence, SSE_HOPS_COMMENT } from '@switchyard/protocol';

export interface StoredEvent {
  /** ULID, strictly increasing within the session. */
  id: string;
  type: string;
  data: string;
  /** Bench only (BENCH_HOPS=1): never stored, so a replayed event has none. */
  hops?: Omit<DeliveryHops, 'sse'>;
}

/** A viewer socket's attachment: whose stream it carries. */
export interface ViewerAttachment {
  kind: 'viewer';
  name: string;
}

/** Who is watching, from the names on the open viewer sockets: one entry per name, sorted. */
export function presenceOf(names: readonly string[]): Presence {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return { viewers: [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([name, streams]) => ({ name, streams })) };
}

/** Close code on a viewer socket when the session is deleted: the SSE stream ends for good. */
export const VIEWER_CLOSE_SESSION_GONE = 4404;

/**
 * Close code on a viewer socket after one page of replay: the SSE stream ends and the client
 * reconnects with Last-Event-ID for the next page (EventSource does so by itself).
 */
export const VIEWER_CLOSE_REPLAY_PAGE = 4206;

/** One replay page: at most this many events or bytes of event JSON, whichever comes first. */
export const REPLAY_PAGE_EVENTS = 2000;
export const REPLAY_PAGE_BYTES = 4 * 1024 * 1024;

/** Keeps each frame far below the WebSocket message limit (bytes of SSE body). */
const MAX_VIEWER_FRAME_BYTES = 512 * 1024;

const KIND_EVENTS = 1;
const KIND_PRESENCE = 2;
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** One event's SSE block, encoded; `slot` is where a hop stamp goes, -1 for none. */
interface Block {
  id: string;
  bytes: Uint8Array;
  slot: number;
}

function blockOf(e: StoredEvent): Block {
  const text = `id: ${e.id}\nevent: ${e.type}\ndata: ${e.data}\n\n`;
  if (e.hops === undefined) return { id: e.id, bytes: utf8.encode(text), slot: -1 };
  // Bench only: the Worker's write time goes into the slot, closing the JSON object.
  const open = utf8.encode(`: ${SSE_HOPS_COMMENT}${e.id} ${JSON.stringify(e.hops).slice(0, -1)},"sse":`);
  const rest = utf8.encode(`}\n${text}`);
  const bytes = new Uint8Array(open.byteLength + rest.byteLength);
  bytes.set(open);
  bytes.set(rest, open.byteLength);
  return { id: e.id, bytes, slot: open.byteLength };
}

function eventsFrame(blocks: Block[]): Uint8Array {
  let head = 1 + 4 + 4;
  let body = 0;
  let slots = 0;
  for (const b of blocks) {
    if (b.id.length > 255) throw new Error(`event id too long: ${b.id}`);
    head += 1 + b.id.length + 4 + (b.slot < 0 ? 0 : 4);
    body += b.bytes.byteLength;
    if (b.slot >= 0) slots++;
  }
  const out = new Uint8Array(head + body);
  const view = new DataView(out.buffer);
  let at = 0;
  out[at++] = KIND_EVENTS;
  view.setUint32(at, blocks.length, true);
  at += 4;
  let start = 0;
  for (const b of blocks) {
    out[at++] = b.id.length;
    for (let i = 0; i < b.id.length; i++) {
      const c = b.id.charCodeAt(i);
      if (c < 0x20 || c > 0x7e) throw new Error(`event id not ASCII: ${b.id}`);
      out[at++] = c;
    }
    view.setUint32(at, start, true);
    at += 4;
    start += b.bytes.byteLength;
  }
  view.setUint32(at, slots, true);
  at += 4;
  start = 0;
  for (const b of blocks) {
    if (b.slot >= 0) {
      view.setUint32(at, start + b.slot, true);
      at += 4;
    }
    start += b.bytes.byteLength;
  }
  for (const b of blocks) {
    out.set(b.bytes, at);
    at += b.bytes.byteLength;
  }
  return out;
}

/**
 * Events in log order as viewer frames of at most MAX_VIEWER_FRAME_BYTES of SSE each (an oversized
 * event goes alone). Built once per batch; the same frames go to every viewer.
 */
export function toViewerFrames(events: StoredEvent[]): Uint8Array[] {
  const frames: Uint8Array[] = [];
  let batch: Block[] = [];
  let size = 0;
  for (const e of events) {
    const b = blockOf(e);
    if (batch.length > 0 && size + b.bytes.byteLength > MAX_VIEWER_FRAME_BYTES) {
      frames.push(eventsFrame(batch));
      batch = [];
      size = 0;
    }
    batch.push(b);
    size += b.bytes.byteLength;
  }
  if (batch.length > 0) frames.push(eventsFrame(batch));
  return frames;
}

/** The frame that tells a viewer who is watching. */
export function presenceFrame(presence: Presence): Uint8Array {
  const body = utf8.encode(`event: presence\ndata: ${JSON.stringify(presence)}\n\n`);
  const out = new Uint8Array(1 + body.byteLength);
  out[0] = KIND_PRESENCE;
  out.set(body, 1);
  return out;
}

function asBytes(frame: ArrayBuffer | Uint8Array): Uint8Array {
  return frame instanceof Uint8Array ? frame : new Uint8Array(frame);
}

/** Little-endian u32 at `at` (no DataView: this runs per viewer per frame). */
function u32(buf: Uint8Array, at: number): number {
  return (
    ((buf[at] as number) | ((buf[at + 1] as number) << 8) | ((buf[at + 2] as number) << 16)) +
    (buf[at + 3] as number) * 2 ** 24
  );
}

function readId(buf: Uint8Array, at: number): string {
  return String.fromCharCode(...buf.subarray(at + 1, at + 1 + (buf[at] as number)));
}

/**
 * A viewer's place in the log: the last event id its client has. Kept as the id's ASCII bytes, so
 * each frame's ids are compared and the cursor moved in place, with no string made per frame.
 */
export class SseCursor {
  readonly #id = new Uint8Array(255);
  #len = 0;

  constructor(after: string | null) {
    const id = after ?? '';
    this.#len = Math.min(id.length, 255);
    for (let i = 0; i < this.#len; i++) this.#id[i] = id.charCodeAt(i);
  }

  get last(): string {
    return String.fromCharCode(...this.#id.subarray(0, this.#len));
  }

  /** Whether the id whose length byte is at `at` in `buf` sorts after the cursor. */
  isBefore(buf: Uint8Array, at: number): boolean {
    const len = buf[at] as number;
    const k = Math.min(len, this.#len);
    for (let i = 0; i < k; i++) {
      const d = (buf[at + 1 + i] as number) - (this.#id[i] as number);
      if (d !== 0) return d > 0;
    }
    return len > this.#len;
  }

  moveTo(buf: Uint8Array, at: number): void {
    this.#len = buf[at] as number;
    for (let i = 0; i < this.#len; i++) this.#id[i] = buf[at + 1 + i] as number;
  }
}

/**
 * The Worker's half, per frame: the SSE bytes after `cursor` (events at or below it are cut off,
 * never written twice), as a view into the frame, or null when nothing is new; the cursor moves to
 * the frame's last event. Presence is passed on only when the client asked for it (`presence`).
 * `now` stamps the hop slots (bench only). A frame it cannot read yields nothing.
 */
export function viewerFrameToSse(
  frame: ArrayBuffer | Uint8Array,
  cursor: SseCursor,
  opts: { presence: boolean; now: () => number },
): Uint8Array | null {
  const buf = asBytes(frame);
  if (buf.byteLength < 1) return null;
  if (buf[0] === KIND_PRESENCE) return opts.presence ? buf.subarray(1) : null;
  if (buf[0] !== KIND_EVENTS || buf.byteLength < 9) return null;
  const n = u32(buf, 1);
  let at = 5;
  let from = -1;
  let lastAt = -1;
  for (let i = 0; i < n; i++) {
    const len = buf[at] as number;
    if (from < 0 && cursor.isBefore(buf, at)) from = u32(buf, at + 1 + len);
    lastAt = at;
    at += 1 + len + 4;
  }
  if (from < 0) return null;
  cursor.moveTo(buf, lastAt);
  const m = u32(buf, at);
  const slotsAt = at + 4;
  const bodyAt = slotsAt + 4 * m;
  const body = buf.subarray(bodyAt + from);
  if (m === 0) return body;
  // Bench only: put the write time into each hop slot that is still in what gets written.
  const stamp = utf8.encode(String(opts.now()));
  const parts: Uint8Array[] = [];
  let cut = from;
  for (let k = 0; k < m; k++) {
    const slot = u32(buf, slotsAt + 4 * k);
    if (slot < from) continue;
    parts.push(buf.subarray(bodyAt + cut, bodyAt + slot), stamp);
    cut = slot;
  }
  parts.push(buf.subarray(bodyAt + cut));
  const out = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

/** A viewer frame read back whole. */
export interface DecodedViewerFrame {
  /** Each event's id and its SSE block (with its hop comment, if any) as text. */
  events: Array<{ id: string; sse: string }>;
  presence?: Presence;
}

/** Reads a frame back whole (tests, and anything that looks at a raw viewer socket). */
export function decodeViewerFrame(frame: ArrayBuffer | Uint8Array): DecodedViewerFrame {
  const buf = asBytes(frame);
  if (buf[0] === KIND_PRESENCE) {
    const text = utf8Decoder.decode(buf.subarray(1));
    const data = /^data: (.*)$/m.exec(text)?.[1];
    if (data === undefined) throw new Error('presence frame without data');
    return { events: [], presence: JSON.parse(data) as Presence };
  }
  if (buf[0] !== KIND_EVENTS) throw new Error(`unknown viewer frame kind ${buf[0]}`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const n = view.getUint32(1, true);
  let at = 5;
  const heads: Array<{ id: string; start: number }> = [];
  for (let i = 0; i < n; i++) {
    const len = buf[at] as number;
    heads.push({ id: readId(buf, at), start: view.getUint32(at + 1 + len, true) });
    at += 1 + len + 4;
  }
  const bodyAt = at + 4 + 4 * view.getUint32(at, true);
  const body = buf.subarray(bodyAt);
  return {
    events: heads.map((h, i) => ({
      id: h.id,
      sse: utf8Decoder.decode(body.subarray(h.start, heads[i + 1]?.start ?? body.byteLength)),
    })),
  };
}
