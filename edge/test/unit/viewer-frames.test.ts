import { SSE_HOPS_COMMENT } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import {
  decodeViewerFrame,
  presenceFrame,
  SseCursor,
  type StoredEvent,
  toViewerFrames,
  viewerFrameToSse,
} from '../../src/hub/viewer-frames.ts';

const text = new TextDecoder();
const sseOf = (e: StoredEvent) => `id: ${e.id}\nevent: ${e.type}\ndata: ${e.data}\n\n`;
const ev = (i: number, data = `{"type":"text.delta","text":"${i}"}`): StoredEvent => ({
  id: `01J${String(i).padStart(23, '0')}`,
  type: 'text.delta',
  data,
});
const opts = { presence: false, now: () => 1234 };

/** What a Worker writes for these frames, from cursor `last`, and its cursor after them. */
function write(frames: Uint8Array[], last: string, o = opts): { sse: string; last: string } {
  const cursor = new SseCursor(last);
  let sse = '';
  for (const f of frames) {
    const out = viewerFrameToSse(f, cursor, o);
    if (out !== null) sse += text.decode(out);
  }
  return { sse, last: cursor.last };
}

describe('viewer frames', () => {
  it('carry each event as its SSE block, in log order, with the data written as stored', () => {
    const events = [ev(1), ev(2, '{"type":"text.delta","text":"ünïcødé ✓ 🙂"}'), ev(3)];
    const frames = toViewerFrames(events);
    expect(frames).toHaveLength(1);
    expect(write(frames, '')).toEqual({ sse: events.map(sseOf).join(''), last: events[2]?.id });
    expect(decodeViewerFrame(frames[0] as Uint8Array)).toEqual({
      events: events.map((e) => ({ id: e.id, sse: sseOf(e) })),
    });
  });

  it('never write an event at or below the cursor twice, and do not move the cursor back', () => {
    const events = [ev(1), ev(2, '{"text":"€€€"}'), ev(3), ev(4)];
    const frames = toViewerFrames(events);
    expect(write(frames, events[1]?.id as string)).toEqual({
      sse: [events[2], events[3]].map((e) => sseOf(e as StoredEvent)).join(''),
      last: events[3]?.id,
    });
    expect(write(frames, events[3]?.id as string)).toEqual({ sse: '', last: events[3]?.id });
    const ahead = `${events[3]?.id}Z`;
    expect(write(frames, ahead)).toEqual({ sse: '', last: ahead });
  });

  it('a frame delivered twice (replay and broadcast overlapping) is written once', () => {
    const events = [ev(1), ev(2), ev(3)];
    const [frame] = toViewerFrames(events) as [Uint8Array];
    expect(write([frame, frame, ...toViewerFrames([ev(4)])], '').sse).toBe([...events, ev(4)].map(sseOf).join(''));
  });

  it('split a large batch into frames of at most 512 KiB of SSE, an oversized event alone, order kept', () => {
    const big = (i: number, kib: number) => ev(i, JSON.stringify({ type: 'text.delta', text: 'é'.repeat(kib * 512) }));
    const events = [big(1, 200), big(2, 200), big(3, 200), big(4, 700), ev(5)];
    const frames = toViewerFrames(events);
    expect(frames.map((f) => decodeViewerFrame(f).events.map((e) => e.id))).toEqual([
      [events[0]?.id, events[1]?.id],
      [events[2]?.id],
      [events[3]?.id],
      [events[4]?.id],
    ]);
    expect(write(frames, '').sse).toBe(events.map(sseOf).join(''));
  });

  it('pass presence on only to clients that asked, without an id, never moving the cursor', () => {
    const presence = { viewers: [{ name: 'ada', streams: 2 }] };
    const frame = presenceFrame(presence);
    expect(decodeViewerFrame(frame)).toEqual({ events: [], presence });
    expect(write([frame], 'X')).toEqual({ sse: '', last: 'X' });
    expect(write([frame], 'X', { ...opts, presence: true })).toEqual({
      sse: `event: presence\ndata: ${JSON.stringify(presence)}\n\n`,
      last: 'X',
    });
  });

  it('bench only: a hop comment before its event, with the Worker write time put in its slot', () => {
    const hops = { read: 1, codec: 2, buffer: 3, sent: 4, hubIn: 5, hubStored: 6, hubSent: 7 };
    const events = [{ ...ev(1), hops }, { ...ev(2, '{"text":"ß"}'), hops: { ...hops, read: 11 } }, ev(3)];
    const frames = toViewerFrames(events);
    const comment = (e: StoredEvent, h: typeof hops) =>
      `: ${SSE_HOPS_COMMENT}${e.id} ${JSON.stringify({ ...h, sse: 1234 })}\n${sseOf(e)}`;
    expect(write(frames, '').sse).toBe(
      comment(events[0] as StoredEvent, hops) + comment(events[1] as StoredEvent, { ...hops, read: 11 }) + sseOf(ev(3)),
    );
    // A skipped event's comment goes with it.
    expect(write(frames, events[0]?.id as string).sse).toBe(
      comment(events[1] as StoredEvent, { ...hops, read: 11 }) + sseOf(ev(3)),
    );
  });

  it('yield nothing for a frame they cannot read', () => {
    for (const junk of [new Uint8Array(), new Uint8Array([9, 0, 0]), new Uint8Array([1, 0])]) {
      expect(write([junk], 'X')).toEqual({ sse: '', last: 'X' });
    }
    expect(() => toViewerFrames([{ id: 'ü', type: 't', data: '{}' }])).toThrow(/ASCII/);
  });
});
