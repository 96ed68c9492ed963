import { env } from 'cloudflare:workers';
import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import {
  AgentEventSchema,
  MESSAGE_HOPS_HEADER,
  MessageHopsSchema,
  SSE_HOPS_COMMENT,
  type AgentEvent,
  type DeliveryHops,
} from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ULID_PATTERN } from '../src/ids.ts';
import { EventLog } from '../src/hub/event-log.ts';
import type { Meta } from '../src/hub/lifecycle.ts';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { type DecodedViewerFrame, decodeViewerFrame } from '../src/hub/viewer-frames.ts';
import { DEFAULT_HEARTBEAT_MS, heartbeatMs, MAX_HEARTBEAT_MS } from '../src/sessions/sse.ts';
import {
  call,
  createSession,
  hubContext,
  hubStub,
  launchAndConnect,
  postMessage,
  SseReader,
  statusStates,
  until,
  type ErrorResponse,
  type FakeRunner,
  type HubTestContext,
  type SseEvent,
} from './hub-helpers.ts';

// The SSE contract and the fan-out shape: the Worker holds each SSE response and a hibernatable
// viewer WebSocket to the hub; the hub replays from its SQLite log, then broadcasts.

afterEach(() => setHubRuntimeForTests({}));

async function logIds(sessionId: string): Promise<string[]> {
  return runInDurableObject(hubStub(sessionId), (_h, state) =>
    state.storage.sql
      .exec<{ id: string }>('SELECT id FROM events ORDER BY id')
      .toArray()
      .map((r) => r.id),
  );
}

/** A session with a connected runner whose first turn is accepted. */
async function busySession(ctx: HubTestContext): Promise<{ sid: string; runner: FakeRunner; mid: string }> {
  const sid = await createSession(ctx);
  const { runner } = await launchAndConnect(ctx, sid);
  const um = await runner.waitFor('user_message');
  runner.send({ type: 'accepted', inReplyTo: um.messageId });
  await until('message.user, starting, busy', async () => (await logIds(sid)).length >= 3);
  return { sid, runner, mid: um.messageId };
}

function deltas(n: number, from = 0): AgentEvent[] {
  return Array.from({ length: n }, (_, i) => ({ type: 'text.delta' as const, index: 0, text: `t${from + i}` }));
}

function expectStrictlyIncreasing(ids: string[]): void {
  for (let i = 1; i < ids.length; i++) {
    if (!((ids[i] ?? '') > (ids[i - 1] ?? '')))
      throw new Error(`ids not strictly increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
  }
}

describe('SSE framing', () => {
  it('streams id: ULID, event: type, data: JSON per event, as text/event-stream', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    const sse = await SseReader.open(ctx, sid);
    expect(sse.response.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8');
    expect(sse.response.headers.get('Cache-Control')).toBe('no-store');
    runner.events(
      [
        { type: 'text.delta', index: 0, text: 'line one\nline two \u2028 "quoted"' },
        { type: 'turn.done', stopReason: 'end_turn' },
      ],
      mid,
    );
    await sse.waitFor('idle', (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle');
    expect(sse.raw.startsWith(': connected\n\n')).toBe(true);
    // Each event block is exactly three lines; data is one line of JSON (U+2028 is not an SSE
    // line break, so it may stay raw; CR and LF never appear raw).
    const blocks = sse.raw.split('\n\n').filter((b) => b !== '' && !b.startsWith(':'));
    for (const b of blocks) expect(b).toMatch(/^id: [0-9A-HJKMNP-TV-Z]{26}\nevent: [a-z.]+\ndata: \{[^\r\n]*\}$/);
    expect(sse.events.map((e) => e.event)).toEqual([
      'message.user',
      'session.status',
      'session.status',
      'text.delta',
      'turn.done',
      'session.status',
    ]);
    for (const e of sse.events) {
      expect(e.id).toMatch(ULID_PATTERN);
      expect(AgentEventSchema.safeParse(e.data).success).toBe(true);
      expect((e.data as { type: string }).type).toBe(e.event);
    }
    expect(sse.ofType('text.delta')[0]?.data).toEqual({
      type: 'text.delta',
      index: 0,
      text: 'line one\nline two \u2028 "quoted"',
      messageId: mid,
    });
    expectStrictlyIncreasing(sse.events.map((e) => e.id));
    expect(sse.events.map((e) => e.id)).toEqual(await logIds(sid));
    await sse.close();
    runner.close();
  });

  it('bench hop stamps reach the SSE stream as a comment naming the event only when the hub has BENCH_HOPS on', async () => {
    for (const benchHops of [false, true]) {
      const ctx = await hubContext({ benchHops });
      const { sid, runner, mid } = await busySession(ctx);
      const sse = await SseReader.open(ctx, sid);
      const hops = { read: 1, codec: 2, buffer: 3 };
      runner.seq += 1;
      runner.send({
        type: 'events',
        events: [{ seq: runner.seq, event: deltas(1)[0] as AgentEvent, messageId: mid, hops }],
        sentAt: 4,
      });
      const delta = await sse.waitFor('the delta', (e) => e.event === 'text.delta');
      const comments = sse.comments.filter((c) => c.startsWith(SSE_HOPS_COMMENT));
      if (!benchHops) expect(comments).toEqual([]);
      else {
        expect(comments).toHaveLength(1);
        const [id, json] = (comments[0] ?? '').slice(SSE_HOPS_COMMENT.length).split(' ');
        expect(id).toBe(delta.id);
        const stamps = JSON.parse(json ?? '{}') as DeliveryHops;
        expect(stamps).toMatchObject({ ...hops, sent: 4 });
        for (const k of ['hubIn', 'hubStored', 'hubSent', 'sse'] as const) expect(stamps[k]).toBeGreaterThan(0);
      }
      // Never stored: the log and a replay carry the event alone.
      expect(delta.data).toEqual({ type: 'text.delta', index: 0, text: 't0', messageId: mid });
      const replay = await SseReader.open(ctx, sid);
      await replay.waitFor('the replayed delta', (e) => e.event === 'text.delta');
      expect(replay.comments.filter((c) => c.startsWith(SSE_HOPS_COMMENT))).toEqual([]);
      await replay.close();
      await sse.close();
      runner.close();
    }
  });

  it("a message's 202 carries the Worker's and the hub's stamps of its way in only when the hub has BENCH_HOPS on", async () => {
    for (const benchHops of [false, true]) {
      const ctx = await hubContext({ benchHops });
      const sid = await createSession(ctx);
      const before = Date.now();
      const r = await postMessage(ctx, sid, 'hello');
      const after = Date.now();
      expect(r.status).toBe(202);
      expect(Object.keys(r.body as object).sort()).toEqual(['duplicate', 'messageId']);
      const header = r.headers.get(MESSAGE_HOPS_HEADER);
      if (!benchHops) expect(header).toBeNull();
      else {
        const way = MessageHopsSchema.parse(JSON.parse(header ?? 'null'));
        // In path order, each within the request.
        expect(before).toBeLessThanOrEqual(way.workerIn);
        expect(way.workerIn).toBeLessThanOrEqual(way.workerCall);
        expect(way.workerCall).toBeLessThanOrEqual(way.hubIn);
        expect(way.hubIn).toBeLessThanOrEqual(after);
      }
    }
  });

  it('sends heartbeat comments at the configured interval, and never slower than 30 s', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid, { envOverride: { SSE_HEARTBEAT_SECONDS: '0.02' } });
    await until('three heartbeats', () => sse.comments.filter((c) => c === 'heartbeat').length >= 3);
    await sse.close();
    const base = env as Env;
    expect(heartbeatMs({ ...base, SSE_HEARTBEAT_SECONDS: undefined })).toBe(DEFAULT_HEARTBEAT_MS);
    expect(heartbeatMs({ ...base, SSE_HEARTBEAT_SECONDS: '600' })).toBe(MAX_HEARTBEAT_MS);
    expect(heartbeatMs({ ...base, SSE_HEARTBEAT_SECONDS: 'soon' })).toBe(DEFAULT_HEARTBEAT_MS);
    expect(DEFAULT_HEARTBEAT_MS).toBeLessThanOrEqual(30_000);
  });
});

describe('SSE replay', () => {
  it('replays exactly what followed Last-Event-ID, then continues live', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    runner.events(deltas(5), mid);
    await runner.waitAck(5);
    const ids = await logIds(sid);
    const cut = ids[4] ?? '';
    const sse = await SseReader.open(ctx, sid, { lastEventId: cut });
    await sse.waitForCount(ids.length - 5);
    runner.events(deltas(2, 5), mid);
    await sse.waitForCount(ids.length - 5 + 2);
    const after = await logIds(sid);
    expect(sse.events.map((e) => e.id)).toEqual(after.slice(5));
    await sse.close();
    runner.close();
  });

  it('?after= replays the same way, and Last-Event-ID wins over it (an EventSource reconnect keeps its URL)', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    runner.events(deltas(4), mid);
    await runner.waitAck(4);
    const ids = await logIds(sid);
    const byQuery = await SseReader.open(ctx, sid, { after: ids[1] ?? '' });
    await byQuery.waitForCount(ids.length - 2);
    expect(byQuery.events.map((e) => e.id)).toEqual(ids.slice(2));
    const both = await SseReader.open(ctx, sid, { after: ids[1] ?? '', lastEventId: ids[5] ?? '' });
    await both.waitForCount(ids.length - 6);
    expect(both.events.map((e) => e.id)).toEqual(ids.slice(6));
    const latest = await SseReader.open(ctx, sid, { lastEventId: ids.at(-1) ?? '' });
    runner.events(deltas(1, 10), mid);
    await latest.waitForCount(1);
    expect(latest.events).toHaveLength(1);
    for (const s of [byQuery, both, latest]) await s.close();
    runner.close();
  });

  it('a client that reconnects mid-stream many times loses nothing and sees nothing twice', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    const BATCHES = 40;
    const PER_BATCH = 7;
    let producing = true;
    const producer = (async () => {
      for (let b = 0; b < BATCHES; b++) {
        const seqs = runner.events(deltas(PER_BATCH, b * PER_BATCH), mid);
        await runner.waitAck(seqs.at(-1) ?? 0);
      }
      runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
      producing = false;
    })();

    const received: SseEvent[] = [];
    let last: string | undefined;
    let reconnects = 0;
    while (producing || reconnects < 25) {
      const sse = await SseReader.open(ctx, sid, last === undefined ? {} : { lastEventId: last });
      // Read a little (or whatever is left), then drop the connection mid-stream.
      const want = 1 + (reconnects % 5);
      await until(
        'some events',
        () =>
          sse.events.length >= want ||
          (!producing &&
            sse.events.some(
              (e: SseEvent) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle',
            )),
      );
      await sse.close();
      received.push(...sse.events);
      last = sse.events.at(-1)?.id ?? last;
      reconnects += 1;
      if (
        !producing &&
        received.some((e) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle')
      )
        break;
    }
    await producer;
    // Drain whatever is left after the last reconnect.
    const tail = await SseReader.open(ctx, sid, last === undefined ? {} : { lastEventId: last });
    const full = await logIds(sid);
    await until(
      'the end of the log',
      () => (received.at(-1)?.id ?? '') === full.at(-1) || tail.events.at(-1)?.id === full.at(-1),
    );
    await tail.close();
    received.push(...tail.events);

    expect(reconnects).toBeGreaterThanOrEqual(10);
    const ids = received.map((e) => e.id);
    expectStrictlyIncreasing(ids); // none doubled
    expect(ids).toEqual(full); // none lost
    expect(received.filter((e) => e.event === 'text.delta')).toHaveLength(BATCHES * PER_BATCH);
    runner.close();
  });

  it('the hub replays and joins a viewer in one step (its viewer socket, without the Worker in between)', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    runner.events(deltas(3), mid);
    await runner.waitAck(3);
    const before = await logIds(sid);
    const res = await hubStub(sid).fetch(`https://hub/viewer?after=${before[2]}`, {
      headers: { Upgrade: 'websocket' },
    });
    const ws = res.webSocket;
    if (ws === null) throw new Error('no viewer socket');
    const got: string[] = [];
    ws.binaryType = 'arraybuffer';
    ws.addEventListener('message', (e: MessageEvent) => {
      for (const ev of decodeViewerFrame(e.data as ArrayBuffer).events) got.push(ev.id);
    });
    ws.accept();
    runner.events(deltas(3, 3), mid);
    await runner.waitAck(6);
    const after = await logIds(sid);
    await until('replay plus live', () => got.length >= after.length - 3);
    expect(got).toEqual(after.slice(3));
    ws.close();
    runner.close();
  });

  it('tells every viewer who is watching when one joins or leaves (presence, not logged)', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const open = async (name: string) => {
      const res = await hubStub(sid).fetch(`https://hub/viewer?name=${name}`, { headers: { Upgrade: 'websocket' } });
      const ws = res.webSocket;
      if (ws === null) throw new Error('no viewer socket');
      const seen: Array<NonNullable<DecodedViewerFrame['presence']>> = [];
      ws.binaryType = 'arraybuffer';
      ws.addEventListener('message', (e: MessageEvent) => {
        const frame = decodeViewerFrame(e.data as ArrayBuffer);
        if (frame.presence !== undefined) seen.push(frame.presence);
      });
      ws.accept();
      return { ws, seen };
    };
    const a = await open('ada');
    await until('first presence', () => a.seen.length >= 1);
    const b = await open('bob');
    const c = await open('ada');
    const both = {
      viewers: [
        { name: 'ada', streams: 2 },
        { name: 'bob', streams: 1 },
      ],
    };
    await until('ada sees three streams', () => JSON.stringify(a.seen.at(-1)) === JSON.stringify(both));
    await until('bob sees three streams', () => JSON.stringify(b.seen.at(-1)) === JSON.stringify(both));
    c.ws.close();
    await until(
      'one tab of ada left',
      () =>
        JSON.stringify(b.seen.at(-1)) ===
        JSON.stringify({
          viewers: [
            { name: 'ada', streams: 1 },
            { name: 'bob', streams: 1 },
          ],
        }),
    );
    expect(await logIds(sid)).toEqual([]);
    a.ws.close();
    b.ws.close();
    // Over SSE only for clients that ask: presence frames carry no id.
    const plain = await call<ErrorResponse>(ctx.app, 'GET', `/api/sessions/${sid}/events?presence=yes`, {
      token: ctx.token,
    });
    expect(plain.status).toBe(400);
    expect(plain.body.error.field).toBe('presence');
  });

  it('a client that leaves ends its stream and its hub socket at once, not at the next heartbeat', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const res = await hubStub(sid).fetch(`https://hub/viewer?name=watcher`, { headers: { Upgrade: 'websocket' } });
    const ws = res.webSocket;
    if (ws === null) throw new Error('no viewer socket');
    let streams = 0;
    ws.binaryType = 'arraybuffer';
    ws.addEventListener('message', (e: MessageEvent) => {
      const p = decodeViewerFrame(e.data as ArrayBuffer).presence;
      if (p !== undefined) streams = p.viewers.reduce((n, v) => n + v.streams, 0);
    });
    ws.accept();
    // The longest heartbeat: only the body's cancel can end this stream within the wait.
    const sse = await SseReader.open(ctx, sid, { envOverride: { SSE_HEARTBEAT_SECONDS: '30' } });
    await until('the SSE stream joins', () => streams === 2);
    await sse.close();
    await until('its hub socket is gone', () => streams === 1);
    ws.close();
  });

  it('refuses a malformed Last-Event-ID or ?after= with 400', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const bad = await call<ErrorResponse>(ctx.app, 'GET', `/api/sessions/${sid}/events`, {
      token: ctx.token,
      headers: { 'Last-Event-ID': 'nope' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'Last-Event-ID' });
    const q = await call<ErrorResponse>(ctx.app, 'GET', `/api/sessions/${sid}/events?after=nope`, { token: ctx.token });
    expect(q.status).toBe(400);
    expect(q.body.error.field).toBe('after');
  });
});

describe('fan-out', () => {
  it('three viewers at once see the same events in the same order', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const viewers = await Promise.all([0, 1, 2].map(() => SseReader.open(ctx, sid)));
    const { runner } = await launchAndConnect(ctx, sid);
    const um = await runner.waitFor('user_message');
    runner.send({ type: 'accepted', inReplyTo: um.messageId });
    runner.events([...deltas(20), { type: 'turn.done', stopReason: 'end_turn' }], um.messageId);
    for (const v of viewers) {
      await v.waitFor('idle', (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle');
    }
    const full = await logIds(sid);
    for (const v of viewers) expect(v.events.map((e) => e.id)).toEqual(full);
    expect(statusStates(viewers[0]?.events ?? [])).toEqual(['starting', 'busy', 'idle']);
    for (const v of viewers) await v.close();
    runner.close();
  });

  it('streams survive the hub being evicted (viewer and runner sockets hibernate)', async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    const sse = await SseReader.open(ctx, sid);
    runner.events(deltas(2), mid);
    await sse.waitFor('before eviction', (e) => e.event === 'text.delta' && (e.data as { text: string }).text === 't1');
    await evictDurableObject(hubStub(sid));
    runner.events(deltas(2, 2), mid);
    await sse.waitFor('after eviction', (e) => e.event === 'text.delta' && (e.data as { text: string }).text === 't3');
    await runner.waitAck(4);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await sse.waitFor(
      'idle after eviction',
      (e) => e.event === 'session.status' && (e.data as { state: string }).state === 'idle',
    );
    const ids = sse.events.map((e) => e.id);
    expectStrictlyIncreasing(ids);
    expect(ids).toEqual(await logIds(sid));
    await sse.close();
    runner.close();
  });

  it("a streamed frame rewrites no meta row; meta is brought up to the log's last event when the hub wakes", async () => {
    const ctx = await hubContext();
    const { sid, runner, mid } = await busySession(ctx);
    const seqs = runner.events(deltas(5), mid);
    await runner.waitAck(seqs.at(-1) as number);
    const counters = (m: Meta) => ({
      lastEventId: m.lastEventId,
      logBytes: m.logBytes,
      lastActivityAt: m.lastActivityAt,
    });
    const read = () =>
      runInDurableObject(hubStub(sid), (hub, state) => ({
        // The hub's meta is private; the test reads what the running object holds.
        live: counters((hub as unknown as { hub: { meta: Meta } }).hub.meta),
        saved: JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'hub'").one().v) as Meta,
        loaded: counters(new EventLog(state.storage).loadMeta()),
      }));
    const before = await read();
    const ids = await logIds(sid);
    expect(before.live.lastEventId).toBe(ids.at(-1));
    // The deltas' frames left the saved row behind the log...
    expect(before.saved.lastEventId).not.toBe(ids.at(-1));
    // ...and loading meta counts them back in: the same counters the running hub holds.
    expect(before.loaded).toEqual(before.live);
    await evictDurableObject(hubStub(sid));
    expect((await read()).live).toEqual(before.live);
    runner.events([{ type: 'turn.done', stopReason: 'end_turn' }], mid);
    await until('the turn to end', async () => (await read()).saved.turn === null);
    expect((await read()).saved.lastEventId).toBe((await logIds(sid)).at(-1));
    runner.close();
  });

  it('deleting the session ends every stream; reconnecting is a 404', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const sse = await SseReader.open(ctx, sid);
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${sid}`, { token: ctx.token })).status).toBe(204);
    await until('the stream to end', () => sse.ended);
    const again = await call(ctx.app, 'GET', `/api/sessions/${sid}/events`, { token: ctx.token });
    expect(again.status).toBe(404);
  });
});
