// Frames the hub sends to a viewer socket (the Worker invocation that holds one SSE response).
// Text frames, JSON: one or more events in log order. `data` is the event's JSON exactly as
// stored, so the Worker writes it into the SSE `data:` line without re-encoding.

import type { DeliveryHops, Presence } from '@switchyard/protocol';

export interface StoredEvent {
  /** ULID, strictly increasing within the session. */
  id: string;
  type: string;
  data: string;
  /** Bench only (BENCH_HOPS=1): never stored, so a replayed event has none. */
  hops?: Omit<DeliveryHops, 'sse'>;
}

export interface ViewerFrame {
  events: StoredEvent[];
  /** Set on the frame sent to every viewer when one joins or leaves. */
  presence?: Presence;
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

/** Keeps each frame far below the WebSocket message limit. */
const MAX_VIEWER_FRAME_CHARS = 512 * 1024;

/** Splits events into frames of at most MAX_VIEWER_FRAME_CHARS (an oversized event goes alone). */
export function toViewerFrames(events: StoredEvent[]): string[] {
  const frames: string[] = [];
  let batch: StoredEvent[] = [];
  let size = 0;
  for (const e of events) {
    const n = e.data.length + e.id.length + e.type.length + 32;
    if (batch.length > 0 && size + n > MAX_VIEWER_FRAME_CHARS) {
      frames.push(JSON.stringify({ events: batch } satisfies ViewerFrame));
      batch = [];
      size = 0;
    }
    batch.push(e);
    size += n;
  }
  if (batch.length > 0) frames.push(JSON.stringify({ events: batch } satisfies ViewerFrame));
  return frames;
}
