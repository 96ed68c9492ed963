import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { RUNNER_LINK_PING, type HubToRunner } from '@switchyard/protocol';
import type { RunnerError } from '../../src/errors.ts';
import { createLogger } from '../../src/log.ts';
import { EventBuffer } from '../../src/serve/event-buffer.ts';
import { HubLink, type HubRequest } from '../../src/serve/hub-link.ts';
import { until } from '../../../test/helpers/poll.ts';

// The link against a bare WebSocket server scripted per test: resend
// positions, protocol errors, invalid frames, heartbeats, token rotation.

interface Conn {
  ws: WebSocket;
  req: IncomingMessage;
  frames: unknown[];
}

const servers: WebSocketServer[] = [];
const links: HubLink[] = [];

afterEach(async () => {
  for (const l of links.splice(0)) await l.close();
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

async function server(): Promise<{ url: string; conns: Conn[]; next(): Promise<Conn> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(wss);
  await new Promise((r) => wss.once('listening', r));
  const conns: Conn[] = [];
  const waiting: Array<(c: Conn) => void> = [];
  wss.on('connection', (ws, req) => {
    const conn: Conn = { ws, req, frames: [] };
    ws.on('message', (d) => {
      const text = String(d);
      conn.frames.push(text === RUNNER_LINK_PING ? 'ping' : JSON.parse(text));
      ws.emit('frame');
    });
    conns.push(conn);
    waiting.shift()?.(conn);
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/connect`,
    conns,
    next: () => new Promise((resolve) => waiting.push(resolve)),
  };
}

function frameWhere(conn: Conn, pred: (f: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const check = () => {
      const hit = conn.frames.find((f) => typeof f === 'object' && f !== null && pred(f as Record<string, unknown>));
      if (hit) {
        conn.ws.off('frame', check);
        resolve(hit as Record<string, unknown>);
      }
    };
    conn.ws.on('frame', check);
    check();
  });
}

const send = (conn: Conn, msg: HubToRunner) => conn.ws.send(JSON.stringify(msg));

function link(
  url: string,
  buffer: EventBuffer,
  over: {
    pingIntervalMs?: number;
    stampSends?: boolean;
    early?: Promise<WebSocket>;
    cli?: () => 'starting' | 'running' | 'stopped';
  } = {},
) {
  const requests: HubRequest[] = [];
  const rejected: RunnerError[] = [];
  const welcomes: boolean[] = [];
  const requestWaiters: Array<(r: HubRequest) => void> = [];
  let onRejected!: (e: RunnerError) => void;
  const rejection = new Promise<RunnerError>((r) => (onRejected = r));
  const l = new HubLink({
    url,
    sessionId: 's1',
    token: 'token-1',
    hello: {
      type: 'hello',
      protocol: 1,
      runnerId: 'r1',
      sessionId: 's1',
      backend: 'pi',
      cliVersion: 'x',
      capabilities: { guard: 'loaded', sandbox: 'none' },
    },
    buffer,
    backoff: { baseMs: 10, maxMs: 20 },
    pingIntervalMs: over.pingIntervalMs ?? 60_000,
    welcomeTimeoutMs: 5000,
    log: createLogger({ level: 'error', write: () => {} }),
    onWelcome: (_w, first) => welcomes.push(first),
    onRequest: (r) => {
      requests.push(r);
      requestWaiters.shift()?.(r);
    },
    onRejected: (e) => {
      rejected.push(e);
      onRejected(e);
    },
    ...(over.stampSends !== undefined && { stampSends: over.stampSends }),
    ...(over.cli !== undefined && { cli: over.cli }),
  });
  links.push(l);
  l.start(over.early);
  const nextRequest = () => new Promise<HubRequest>((r) => requestWaiters.push(r));
  return { l, requests, rejected, welcomes, rejection, nextRequest };
}

function pushEvents(buffer: EventBuffer, n: number): void {
  for (let i = 0; i < n; i++)
    buffer.push('event', (seq) => JSON.stringify({ seq, event: { type: 'text.delta', index: 0, text: `e${seq}` } }));
}

describe('HubLink', () => {
  test('a link dialled early (HubLink.dial) says nothing until adopted, then is the first connection; a dead one is dialled again', async () => {
    const hub = await server();
    const opened = hub.next();
    const dialling = HubLink.dial({ url: hub.url, sessionId: 's1', token: 'token-1', welcomeTimeoutMs: 5000 });
    const early = await dialling;
    const c1 = await opened;
    expect(c1.req.headers.authorization).toBe('Bearer token-1');
    expect(c1.req.url).toBe('/connect?session=s1');
    await until('the early socket open', () => early.readyState === early.OPEN, 5000);
    expect(c1.frames).toEqual([]);
    const { welcomes } = link(hub.url, new EventBuffer({ maxFrames: 100, maxBytes: 1e6 }), { early: dialling });
    expect(await frameWhere(c1, (f) => f.type === 'hello')).toMatchObject({ runnerId: 'r1', lastSeq: 0 });
    send(c1, { type: 'welcome', ackedSeq: 0 });
    await until('welcomed', () => welcomes.length === 1, 5000);
    expect(hub.conns).toHaveLength(1);

    // The hub dropped the early socket before the runner was ready: the link dials afresh.
    const second = hub.next();
    const deadDialling = HubLink.dial({ url: hub.url, sessionId: 's1', token: 'token-1', welcomeTimeoutMs: 5000 });
    const dead = await deadDialling;
    (await second).ws.terminate();
    await until('the early socket closed', () => dead.readyState === dead.CLOSED, 5000);
    const third = hub.next();
    link(hub.url, new EventBuffer({ maxFrames: 100, maxBytes: 1e6 }), { early: deadDialling });
    expect(await frameWhere(await third, (f) => f.type === 'hello')).toMatchObject({ runnerId: 'r1' });
    expect(hub.conns).toHaveLength(3);
  });

  test('hello carries lastSeq, the CLI as it is then, and the bearer token (session in the URL, token not); unacked frames follow it before the welcome, and the welcome sends nothing twice', async () => {
    const hub = await server();
    const buffer = new EventBuffer({ maxFrames: 100, maxBytes: 1e6 });
    pushEvents(buffer, 5);
    const first = hub.next();
    let cli: 'starting' | 'running' = 'starting';
    const { l, welcomes } = link(hub.url, buffer, { cli: () => cli });
    const c1 = await first;
    expect(c1.req.headers.authorization).toBe('Bearer token-1');
    expect(c1.req.url).toBe('/connect?session=s1');
    const seqsOf = (c: Conn) =>
      c.frames.flatMap((f) =>
        (f as { type?: string }).type === 'events'
          ? (f as { events: Array<{ seq: number }> }).events.map((e) => e.seq)
          : [],
      );
    // Nothing acked yet: all five go out right behind the hello, with no welcome sent.
    await frameWhere(c1, (f) => f.type === 'events');
    expect((c1.frames[0] as { type: string; lastSeq: number }).type).toBe('hello');
    expect(c1.frames[0]).toMatchObject({ lastSeq: 5, cli: 'starting' });
    expect(seqsOf(c1)).toEqual([1, 2, 3, 4, 5]);
    send(c1, { type: 'welcome', ackedSeq: 2, runnerToken: 'token-2' });
    await until('welcomed', () => welcomes.length === 1, 5000);
    send(c1, { type: 'ack', seq: 4 });
    await l.waitDrained(50);
    expect(buffer.after(0).map((f) => f.seq)).toEqual([5]);
    pushEvents(buffer, 1);
    l.notify();
    await frameWhere(c1, (f) => f.type === 'events' && (f.events as Array<{ seq: number }>)[0]?.seq === 6);
    // The welcome's ack (2) sent nothing again: each seq once on this socket.
    expect(seqsOf(c1)).toEqual([1, 2, 3, 4, 5, 6]);

    // The link drops; the reconnect uses the rotated token and sends what is unacked behind its hello.
    cli = 'running';
    const second = hub.next();
    c1.ws.terminate();
    const c2 = await second;
    expect(c2.req.headers.authorization).toBe('Bearer token-2');
    expect(await frameWhere(c2, (f) => f.type === 'hello')).toMatchObject({ lastSeq: 6, cli: 'running' });
    await frameWhere(c2, (f) => f.type === 'events');
    expect(seqsOf(c2)).toEqual([5, 6]);
    send(c2, { type: 'welcome', ackedSeq: 5 });
    send(c2, { type: 'ack', seq: 6 });
    expect(await l.waitDrained(2000)).toBe(true);
    expect(seqsOf(c2)).toEqual([5, 6]);
  });

  test('events frames say when they were sent only when bench hop stamps are on; otherwise nothing is added', async () => {
    for (const stampSends of [false, true]) {
      const hub = await server();
      const buffer = new EventBuffer({ maxFrames: 100, maxBytes: 1e6 });
      pushEvents(buffer, 2);
      const next = hub.next();
      const before = performance.timeOrigin + performance.now();
      link(hub.url, buffer, { stampSends });
      const c = await next;
      const batch = await frameWhere(c, (f) => f.type === 'events');
      if (stampSends) {
        expect(Object.keys(batch).sort()).toEqual(['events', 'sentAt', 'type']);
        expect(batch.sentAt).toBeGreaterThanOrEqual(before);
      } else expect(Object.keys(batch).sort()).toEqual(['events', 'type']);
    }
  });

  test('a welcome claiming frames the runner never produced is a protocol error: rejected, no reconnect', async () => {
    const hub = await server();
    const first = hub.next();
    const { rejection } = link(hub.url, new EventBuffer({ maxFrames: 10, maxBytes: 1e6 }));
    const c = await first;
    await frameWhere(c, (f) => f.type === 'hello');
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    send(c, { type: 'welcome', ackedSeq: 7 });
    expect(await rejection).toMatchObject({ code: 'hub_protocol' });
    expect(await closed).toBe(4400);
  });

  test('an invalid user_message is answered with a typed reject, valid ones reach the runner', async () => {
    const hub = await server();
    const first = hub.next();
    const { requests, nextRequest } = link(hub.url, new EventBuffer({ maxFrames: 10, maxBytes: 1e6 }));
    const c = await first;
    send(c, { type: 'welcome', ackedSeq: 0 });
    c.ws.send(
      JSON.stringify({
        type: 'user_message',
        messageId: 'bad',
        message: { text: 'x', images: [{ mediaType: 'image/bmp', data: '!!' }] },
      }),
    );
    expect(await frameWhere(c, (f) => f.type === 'reject')).toMatchObject({
      inReplyTo: 'bad',
      error: { code: 'invalid_message' },
    });
    const delivered = nextRequest();
    send(c, { type: 'user_message', messageId: 'good', message: { text: 'hi' } });
    await delivered;
    expect(requests).toEqual([{ type: 'user_message', messageId: 'good', message: { text: 'hi' } }]);
  });

  test('heartbeat: pings go out; a hub silent for two intervals is dropped and redialled', async () => {
    const hub = await server();
    const first = hub.next();
    const { welcomes } = link(hub.url, new EventBuffer({ maxFrames: 10, maxBytes: 1e6 }), { pingIntervalMs: 100 });
    const c1 = await first;
    const second = hub.next();
    send(c1, { type: 'welcome', ackedSeq: 0 });
    // c1 never answers a ping: the link must give up on it by itself.
    const c2 = await second;
    expect(c1.frames).toContain('ping');
    send(c2, { type: 'welcome', ackedSeq: 0 });
    await frameWhere(c2, (f) => f.type === 'hello');
    expect(welcomes[0]).toBe(true);
  });

  test('a 4409 close (superseded) is final', async () => {
    const hub = await server();
    const first = hub.next();
    const { rejection } = link(hub.url, new EventBuffer({ maxFrames: 10, maxBytes: 1e6 }));
    const c = await first;
    send(c, { type: 'welcome', ackedSeq: 0 });
    c.ws.close(4409, 'superseded');
    expect(await rejection).toMatchObject({ code: 'hub_rejected', message: expect.stringContaining('4409') });
    expect(hub.conns).toHaveLength(1);
  });
});
