import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCredentialProxy, type CredentialProxy, type UpstreamProblem } from '../src/sandbox/credential-proxy.ts';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { WARM_UP_REPLY_TEXT } from '../src/sandbox/warm-up-reply.ts';

const REAL_KEY = 'sk-ant-real-key-never-leaves-the-runner';

let model: OfflineModel;
let proxy: CredentialProxy;
beforeAll(async () => {
  model = await startOfflineModel();
  proxy = await startCredentialProxy({ upstream: model.url, apiKey: REAL_KEY });
});
afterAll(async () => {
  await proxy.close();
  await model.close();
});
afterEach(() => model.reset());

const body = (text: string, stream = false) =>
  JSON.stringify({
    model: 'm',
    max_tokens: 10,
    stream,
    tools: [{ name: 'noop', input_schema: { type: 'object' } }],
    messages: [{ role: 'user', content: `#offline ${JSON.stringify({ text })}` }],
  });

function call(path: string, init: RequestInit & { key?: string | null } = {}) {
  const headers = new Headers(init.headers);
  if (init.key !== null) headers.set('x-api-key', init.key ?? proxy.sessionKey);
  headers.set('content-type', 'application/json');
  headers.set('anthropic-version', '2023-06-01');
  return fetch(`${proxy.url}${path}`, { method: 'POST', ...init, headers });
}

describe('credential proxy', () => {
  it('listens on loopback and hands out a per-session key that is not the real one', () => {
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(proxy.sessionKey).toMatch(/^sy-session-/);
    expect(proxy.sessionKey).not.toContain(REAL_KEY);
  });

  it('swaps the session key for the real one upstream, query and headers intact', async () => {
    const res = await call('/v1/messages?beta=true', {
      body: body('hello through the proxy'),
      headers: { 'anthropic-beta': 'x-1', authorization: `Bearer ${proxy.sessionKey}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ content: [{ type: 'text', text: 'hello through the proxy' }] });
    const [rec] = model.requests();
    expect(rec?.url).toBe('/v1/messages?beta=true');
    expect(rec?.headers['x-api-key']).toBe(REAL_KEY);
    expect(rec?.headers.authorization).toBeUndefined();
    expect(rec?.headers['anthropic-beta']).toBe('x-1');
    expect(JSON.stringify(rec?.headers)).not.toContain(proxy.sessionKey);
  });

  it('streams SSE through unchanged', async () => {
    const res = await call('/v1/messages', { body: body('streamed words here', true) });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await res.text();
    expect(text).toContain('event: message_start');
    expect(text).toContain('streamed words here');
    expect(text).toContain('event: message_stop');
  });

  it('refuses a missing or wrong key without calling upstream, and never echoes a key', async () => {
    for (const key of [null, 'sk-ant-guess', REAL_KEY, `${proxy.sessionKey}x`]) {
      const res = await call('/v1/messages', { body: body('x'), key });
      expect(res.status).toBe(401);
      const text = await res.text();
      expect(text).toContain('authentication_error');
      expect(text).not.toContain(REAL_KEY);
      expect(text).not.toContain(proxy.sessionKey);
    }
    expect(model.requests()).toEqual([]);
  });

  it('forwards only the Messages API: anything else is 404 here, even with the key', async () => {
    for (const [method, path] of [
      ['POST', '/_offline/queue'],
      ['GET', '/v1/messages'],
      ['POST', '/v1/complete'],
      ['DELETE', '/v1/messages'],
    ] as const) {
      const res = await call(path, { method, ...(method === 'POST' ? { body: '[]' } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await call('/v1/messages/count_tokens', { body: body('x') })).status).toBe(200);
    expect(model.requests().map((r) => r.path)).toEqual(['/v1/messages/count_tokens']);
  });

  it("keeps a CLI's idle connection for 10 minutes and says so, so a call after a pause reuses it", async () => {
    const agent = new Agent({ keepAlive: true });
    const answered = await new Promise<IncomingMessage>((resolve, reject) => {
      const headers = { 'content-type': 'application/json', 'x-api-key': proxy.sessionKey };
      request(`${proxy.url}/v1/messages`, { method: 'POST', agent, headers }, resolve)
        .on('error', reject)
        .end(body('kept'));
    });
    answered.resume();
    // The hint both CLIs' clients go by (undici closes 2 s before it); Node's default says 5.
    expect(answered.headers['keep-alive']).toBe('timeout=600');
    agent.destroy();
  });

  it("answers claude's HEAD / itself", async () => {
    const res = await fetch(`${proxy.url}/`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(model.requests()).toEqual([]);
  });

  it('a keyless upstream (the offline model, a gateway) gets no key at all', async () => {
    const keyless = await startCredentialProxy({ upstream: model.url });
    try {
      const res = await fetch(`${keyless.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': keyless.sessionKey, 'content-type': 'application/json' },
        body: body('k'),
      });
      expect(res.status).toBe(200);
      expect(model.requests()[0]?.headers['x-api-key']).toBeUndefined();
    } finally {
      await keyless.close();
    }
  });

  it('keeps a path prefix of the upstream and reports an unreachable upstream without the key', async () => {
    let seen = '';
    const up: Server = createServer((req, res) => {
      seen = `${req.url} ${req.headers['x-api-key']}`;
      res.end('{}');
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as AddressInfo).port;
    const p = await startCredentialProxy({ upstream: `http://127.0.0.1:${port}/gateway/anthropic/`, apiKey: REAL_KEY });
    try {
      await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': p.sessionKey }, body: '{}' });
      expect(seen).toBe(`/gateway/anthropic/v1/messages ${REAL_KEY}`);
      await new Promise<void>((r) => up.close(() => r()));
      const res = await fetch(`${p.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': p.sessionKey },
        body: '{}',
      });
      expect(res.status).toBe(502);
      const text = await res.text();
      expect(text).toMatch(/unreachable \(ECONNREFUSED\)/);
      expect(text).not.toContain(REAL_KEY);
      // A CLI may show this text in the chat: no host or port of the runner's network.
      expect(text).not.toMatch(/127\.0\.0\.1|:\d+/);
    } finally {
      await p.close();
      up.close();
    }
  });

  it('tells the operator of calls that failed upstream (host, status or error code, the start of the answer); a good call says nothing', async () => {
    let status = 200;
    const answer = JSON.stringify({
      type: 'error',
      error: { type: 'overloaded_error', message: `Overloaded ${'x'.repeat(1000)}` },
    });
    const up: Server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{}' : answer);
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as AddressInfo).port;
    const problems: UpstreamProblem[] = [];
    const p = await startCredentialProxy({
      upstream: `http://127.0.0.1:${port}`,
      apiKey: REAL_KEY,
      onUpstreamProblem: (problem) => problems.push(problem),
    });
    const post = async () => {
      const res = await fetch(`${p.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': p.sessionKey },
        body: '{}',
      });
      return { status: res.status, text: await res.text() };
    };
    try {
      expect(await post()).toEqual({ status: 200, text: '{}' });
      status = 529;
      // The CLI gets the provider's answer whole, as before.
      expect(await post()).toEqual({ status: 529, text: answer });
      await new Promise<void>((r) => up.close(() => r()));
      expect((await post()).status).toBe(502);
      await expect.poll(() => problems.length).toBe(2);
      // In either order: the first is told once its answer has ended.
      expect(problems).toEqual(
        expect.arrayContaining([
          { upstream: `127.0.0.1:${port}`, path: '/v1/messages', status: 529, body: answer.slice(0, 300) },
          { upstream: `127.0.0.1:${port}`, path: '/v1/messages', code: 'ECONNREFUSED' },
        ]),
      );
      expect(JSON.stringify(problems)).not.toContain(REAL_KEY);
    } finally {
      await p.close();
      up.close();
    }
  });

  it('speaks TLS to an https upstream (loaded at the first call), and a failed handshake is a 502 without the key', async () => {
    // A TCP server stands in for the provider: what matters is that the proxy's first bytes are a
    // TLS handshake record (0x16), not an HTTP request line; it then hangs up.
    const firstBytes: number[] = [];
    const up = createTcpServer((socket) => {
      socket.once('data', (d: Buffer) => {
        firstBytes.push(d[0] as number, d[1] as number);
        socket.destroy();
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as AddressInfo).port;
    const p = await startCredentialProxy({ upstream: `https://127.0.0.1:${port}`, apiKey: REAL_KEY });
    try {
      const res = await fetch(`${p.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': p.sessionKey },
        body: '{}',
      });
      expect(firstBytes).toEqual([0x16, 0x03]);
      expect(res.status).toBe(502);
      expect(await res.text()).not.toContain(REAL_KEY);
    } finally {
      await p.close();
      up.close();
    }
  });

  it("answers locally until forwardUpstream (a pooled runner's warm-up), still only with the session key", async () => {
    const pooled = await startCredentialProxy({ upstream: model.url, apiKey: REAL_KEY, answerLocally: true });
    const post = (path: string, payload: string, key = pooled.sessionKey) =>
      fetch(`${pooled.url}${path}`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: payload,
      });
    try {
      // Streamed: the Messages API's events in order, one text block, end_turn.
      const streamed = await post('/v1/messages', body('never upstream', true));
      expect(streamed.headers.get('content-type')).toBe('text/event-stream');
      const events = (await streamed.text())
        .split('\n\n')
        .filter((block) => block.trim() !== '')
        .map((block) => {
          const [event, data] = block.split('\n');
          const parsed = JSON.parse((data ?? '').replace(/^data: /, '')) as Record<string, unknown>;
          expect(event).toBe(`event: ${parsed.type}`);
          return parsed;
        });
      expect(events.map((e) => e.type)).toEqual([
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      expect(events[0]).toMatchObject({ message: { role: 'assistant', model: 'm', content: [] } });
      expect(events[2]).toMatchObject({ delta: { type: 'text_delta', text: WARM_UP_REPLY_TEXT } });
      expect(events[4]).toMatchObject({ delta: { stop_reason: 'end_turn' } });
      // Not streamed: the whole message as JSON.
      const whole = await post('/v1/messages', body('never upstream'));
      expect(await whole.json()).toMatchObject({
        role: 'assistant',
        content: [{ type: 'text', text: WARM_UP_REPLY_TEXT }],
        stop_reason: 'end_turn',
      });
      // A token count (claude's context usage in its warm-up): an estimate from the body's size.
      const payload = body('count these');
      const counted = await post('/v1/messages/count_tokens', payload);
      expect(await counted.json()).toEqual({ input_tokens: Math.ceil(Buffer.byteLength(payload) / 4) });
      // Anything else the CLI may call is not answered with made-up data; a wrong key is still refused.
      const models = await fetch(`${pooled.url}/v1/models`, { headers: { 'x-api-key': pooled.sessionKey } });
      expect(models.status).toBe(503);
      expect((await post('/v1/messages', body('x'), 'sk-ant-guess')).status).toBe(401);
      expect(model.requests()).toEqual([]);

      pooled.forwardUpstream();
      const forwarded = await post('/v1/messages', body('after the claim'));
      expect(await forwarded.json()).toMatchObject({ content: [{ type: 'text', text: 'after the claim' }] });
      expect(model.requests().map((r) => r.headers['x-api-key'])).toEqual([REAL_KEY]);
    } finally {
      await pooled.close();
    }
  });

  /**
   * Opens a connection to an upstream that answers each call with the index of the connection it
   * came on, through `open` on a proxy started with `options`, then makes one call: it must ride
   * on the connection opened ahead.
   */
  async function callAfterOpening(
    options: { answerLocally?: boolean },
    open: (proxy: Awaited<ReturnType<typeof startCredentialProxy>>) => void,
  ) {
    const sockets: Array<import('node:net').Socket> = [];
    const up: Server = createServer((req, res) => res.end(JSON.stringify({ on: sockets.indexOf(req.socket) })));
    up.on('connection', (s) => sockets.push(s));
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as AddressInfo).port;
    const proxy = await startCredentialProxy({ upstream: `http://127.0.0.1:${port}`, ...options });
    try {
      const connected = new Promise((r) => up.once('connection', r));
      open(proxy);
      await connected;
      const res = await fetch(`${proxy.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': proxy.sessionKey },
        body: '{}',
      });
      expect(await res.json()).toEqual({ on: 0 });
      expect(sockets).toHaveLength(1);
    } finally {
      await proxy.close();
      up.close();
    }
  }

  it('opens the upstream connection at forwardUpstream, and the first forwarded call takes it', () =>
    callAfterOpening({ answerLocally: true }, (pooled) => pooled.forwardUpstream()));

  // No free connection (a session's first call, or any after 5 s idle): prepareCall opens it.
  it("opens the upstream connection at prepareCall (a message written to the CLI), and the CLI's call takes it", () =>
    callAfterOpening({}, (proxy) => proxy.prepareCall()));

  it('an https upstream: the TLS handshake starts at forwardUpstream, before any call', async () => {
    let hello!: (bytes: number[]) => void;
    const firstBytes = new Promise<number[]>((r) => (hello = r));
    const up = createTcpServer((socket) =>
      socket.once('data', (d: Buffer) => {
        hello([d[0] as number, d[1] as number]);
        socket.destroy();
      }),
    );
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as AddressInfo).port;
    const pooled = await startCredentialProxy({ upstream: `https://127.0.0.1:${port}`, answerLocally: true });
    try {
      pooled.forwardUpstream();
      expect(await firstBytes).toEqual([0x16, 0x03]);
    } finally {
      await pooled.close();
      up.close();
    }
  });

  it('refuses a non-http upstream', async () => {
    await expect(startCredentialProxy({ upstream: 'file:///etc/passwd' })).rejects.toThrow(/http\(s\)/);
  });
});
