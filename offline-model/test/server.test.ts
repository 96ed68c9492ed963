import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOfflineModel } from '../src/index.ts';
import type { OfflineModel } from '../src/index.ts';
import { inputTokens, MessagesRequestSchema } from '../src/request.ts';
import { SseReader } from '../../test/helpers/sse.ts';

let model: OfflineModel;
beforeAll(async () => {
  model = await startOfflineModel();
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => model.reset());

const piTools = [
  { name: 'read', input_schema: { type: 'object', properties: { path: {} } } },
  { name: 'bash', input_schema: { type: 'object', properties: { command: {} } } },
  { name: 'write', input_schema: { type: 'object', properties: { path: {}, content: {} } } },
];

function body(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: 'any-model',
    max_tokens: 1000,
    tools: piTools,
    messages: [{ role: 'user', content: text }],
    ...extra,
  };
}

/** The control routes' credentials. */
const control = () => ({ authorization: `Bearer ${model.controlToken}` });

function post(
  path: string,
  payload: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${model.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
    ...(signal ? { signal } : {}),
  });
}

type Event = { type: string; at: number; [k: string]: unknown };

/** Reads an SSE response to its end (or until the connection breaks), timestamping each event. */
async function readSse(res: Response): Promise<{ events: Event[]; error?: unknown }> {
  const sse = new SseReader(res.body!);
  await sse.finished;
  const events = sse.events.map((e) => ({ ...(e.data as { type: string }), at: e.receivedAt }));
  return sse.error === undefined ? { events } : { events, error: sse.error };
}

const textOf = (events: Event[]): string =>
  events
    .filter((e) => e.type === 'content_block_delta')
    .map((e) => (e.delta as { text?: string }).text ?? '')
    .join('');

describe('routes', () => {
  it('HEAD / and HEAD/GET /api/hello answer 200', async () => {
    expect((await fetch(`${model.url}/`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${model.url}/api/hello`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${model.url}/api/hello`)).status).toBe(200);
  });

  it('anything else is a 404 in Anthropic error shape', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/v1/messages'],
      ['POST', '/v1/complete'],
      ['GET', '/'],
    ] as const) {
      const res = await fetch(`${model.url}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    expect((await fetch(`${model.url}/_offline/nope`, { headers: control() })).status).toBe(404);
  });

  it('count_tokens returns the deterministic input estimate', async () => {
    const b = body('count me');
    const res = await post('/v1/messages/count_tokens?beta=true', b);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input_tokens: inputTokens(MessagesRequestSchema.parse(b)) });
  });

  it('a body that is not JSON gets a 400 invalid_request_error', async () => {
    const res = await post('/v1/messages', '{not json');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/not valid JSON/) },
    });
    const empty = await post('/v1/messages', '');
    expect(empty.status).toBe(400);
    const noMessages = await post('/v1/messages', { model: 'x' });
    expect(noMessages.status).toBe(400);
    expect(await noMessages.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(model.requests().map((r) => r.response?.status)).toEqual([400, 400, 400]);
  });
});

describe('messages', () => {
  it('non-streaming: default reply quoting the user text', async () => {
    const res = await post('/v1/messages?beta=true', body('hello offline'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const msg = (await res.json()) as Record<string, unknown>;
    expect(msg).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'any-model',
      content: [{ type: 'text', text: 'Offline model reply to: hello offline' }],
      stop_reason: 'end_turn',
    });
  });

  it('streaming: the same reply as SSE', async () => {
    const res = await post('/v1/messages', body('hello stream', { stream: true }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const { events, error } = await readSse(res);
    expect(error).toBeUndefined();
    expect(events.at(0)?.type).toBe('message_start');
    expect(events.at(-1)?.type).toBe('message_stop');
    expect(textOf(events)).toBe('Offline model reply to: hello stream');
  });

  it('thinking then text', async () => {
    const { events } = await readSse(
      await post('/v1/messages', body('#offline {"thinking":"let me see","text":"done"}', { stream: true })),
    );
    const deltas = events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta);
    expect(deltas).toEqual([
      { type: 'thinking_delta', thinking: 'let me see' },
      { type: 'signature_delta', signature: expect.any(String) },
      { type: 'text_delta', text: 'done' },
    ]);
  });

  it('tool call built from the offered tools, streaming and not', async () => {
    const { events } = await readSse(
      await post('/v1/messages', body('#offline {"tool":"write","path":"a.txt","content":"A"}', { stream: true })),
    );
    expect(events.find((e) => e.type === 'content_block_start')).toMatchObject({
      content_block: { type: 'tool_use', name: 'write' },
    });
    const json = events
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => (e.delta as { partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual({ path: 'a.txt', content: 'A' });
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' } });

    const msg = (await (await post('/v1/messages', body('#offline {"tool":"shell","command":"ls"}'))).json()) as {
      content: unknown[];
    };
    expect(msg.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'bash', input: { command: 'ls' } },
    ]);
  });

  it.each([
    [401, 'authentication_error'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [529, 'overloaded_error'],
  ])('error %i → %s, streaming or not', async (status, type) => {
    for (const stream of [true, false]) {
      const res = await post('/v1/messages', body(`#offline {"error":${status}}`, { stream }));
      expect(res.status).toBe(status);
      expect(await res.json()).toEqual({ type: 'error', error: { type, message: expect.any(String) } });
      expect(res.headers.get('retry-after')).toBeNull();
    }
  });

  it('429 with retryAfter sends the retry-after header', async () => {
    const res = await post('/v1/messages', body('#offline {"error":429,"retryAfter":0}', { stream: true }));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('0');
    const res7 = await post('/v1/messages', body('#offline {"error":529,"retryAfter":7}'));
    expect(res7.headers.get('retry-after')).toBe('7');
  });

  it('cut: the client sees message_start and part of a text block, then the connection breaks', async () => {
    const { events, error } = await readSse(
      await post('/v1/messages', body('#offline {"cut":true,"text":"half a"}', { stream: true })),
    );
    expect(error).toBeDefined();
    expect(events.map((e) => e.type)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
    expect(textOf(events)).toBe('half a');

    const res = await post('/v1/messages', body('#offline {"cut":true}'));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('slow streaming spreads the deltas out, and a client can hang up mid-stream', async () => {
    const { events } = await readSse(
      await post('/v1/messages', body('#offline {"text":"abcdef","chunks":3,"delayMs":80}', { stream: true })),
    );
    const deltas = events.filter((e) => e.type === 'content_block_delta');
    expect(deltas).toHaveLength(3);
    expect(textOf(events)).toBe('abcdef');
    expect(deltas[2]!.at - deltas[0]!.at).toBeGreaterThanOrEqual(150);

    const abort = new AbortController();
    const res = await post(
      '/v1/messages',
      body('#offline {"text":"0123456789","chunks":10,"delayMs":200}', { stream: true }),
      {},
      abort.signal,
    );
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_block_delta')) seen += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    // The server survives the hang-up and keeps answering.
    expect((await post('/v1/messages', body('after'))).status).toBe(200);
  });

  it('a bad directive is answered in text, not with an HTTP error', async () => {
    const msg = (await (await post('/v1/messages', body('#offline {"tool":"fly"}'))).json()) as {
      content: { text: string }[];
    };
    expect(msg.content[0]?.text).toMatch(/^Offline model: bad #offline directive/);
  });
});

describe('control routes', () => {
  it('need the control token: without it or with another one, 401 and nothing is shown or queued', async () => {
    await post('/v1/messages', body('a prompt another session must not see'));
    for (const headers of [
      {},
      { authorization: 'Bearer guessed-guessed-guessed' },
      { authorization: model.controlToken },
    ] as Record<string, string>[]) {
      for (const [method, path] of [
        ['GET', '/_offline/requests'],
        ['GET', '/_offline/queue'],
        ['POST', '/_offline/queue'],
        ['POST', '/_offline/reset'],
      ] as const) {
        const res = await fetch(`${model.url}${path}`, {
          method,
          headers,
          ...(method === 'POST' && { body: JSON.stringify({ tool: 'shell', command: 'id' }) }),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        const text = await res.text();
        expect(text).toContain('authentication_error');
        expect(text).not.toContain('must not see');
      }
    }
    expect(await (await fetch(`${model.url}/_offline/queue`, { headers: control() })).json()).toEqual([]);
    expect(model.requests()).toHaveLength(1);
  });
});

describe('queue', () => {
  it('main turns consume queued scripts in order; side requests do not', async () => {
    const res = await post('/_offline/queue', [{ text: 'first' }, { error: 529 }], control());
    expect(await res.json()).toEqual({ queued: 2 });
    model.enqueue({ text: 'third' });

    // A small tool-less non-streaming request, like a CLI's side query, even one carrying a directive.
    const side = (await (
      await post('/v1/messages', { max_tokens: 1, messages: [{ role: 'user', content: '#offline {"error":500}' }] })
    ).json()) as {
      content: { text: string }[];
    };
    expect(side.content[0]?.text).toBe('Offline model.');
    expect(await (await fetch(`${model.url}/_offline/queue`, { headers: control() })).json()).toHaveLength(3);

    const first = (await (await post('/v1/messages', body('#offline {"text":"directive loses"}'))).json()) as {
      content: { text: string }[];
    };
    expect(first.content[0]?.text).toBe('first');
    expect((await post('/v1/messages', body('x', { stream: true }))).status).toBe(529);
    const third = await readSse(await post('/v1/messages', body('x', { stream: true })));
    expect(textOf(third.events)).toBe('third');
    // Empty queue: back to the default.
    const after = (await (await post('/v1/messages', body('plain'))).json()) as { content: { text: string }[] };
    expect(after.content[0]?.text).toBe('Offline model reply to: plain');
    expect(model.requests().map((r) => r.response?.source)).toEqual(['side', 'queue', 'queue', 'queue', 'default']);
  });

  it('a single script is accepted too; invalid scripts are rejected', async () => {
    expect(await (await post('/_offline/queue', { text: 'one' }, control())).json()).toEqual({ queued: 1 });
    const bad = await post('/_offline/queue', [{ text: 'ok' }, { tool: 'teleport' }], control());
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect((await post('/_offline/queue', 'nope', control())).status).toBe(400);
    expect(await (await fetch(`${model.url}/_offline/queue`, { headers: control() })).json()).toEqual([
      { text: 'one' },
    ]);
    // @ts-expect-error -- checking the runtime guard against an invalid script
    expect(() => model.enqueue({ error: 'soon' })).toThrow();
  });

  it('reset over HTTP clears queue and log', async () => {
    model.enqueue({ text: 'x' });
    await post('/v1/messages', body('log me'));
    expect(model.requests()).toHaveLength(1);
    model.enqueue({ text: 'y' });
    expect(await (await post('/_offline/reset', '', control())).json()).toEqual({ ok: true });
    expect(model.requests()).toEqual([]);
    expect(await (await fetch(`${model.url}/_offline/queue`, { headers: control() })).json()).toEqual([]);
  });
});

describe('recording', () => {
  it('records method, path, url, headers (api keys kept), parsed body, time and answer', async () => {
    const before = Date.now();
    const b = body('record me', { stream: true });
    await readSse(await post('/v1/messages?beta=true', b, { 'x-api-key': 'sk-test-1', authorization: 'Bearer tok-2' }));
    await fetch(`${model.url}/`, { method: 'HEAD' });
    await post('/_offline/queue', [], control()); // admin calls are not recorded

    const recs = model.requests();
    expect(recs).toHaveLength(2);
    expect(recs[0]).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      url: '/v1/messages?beta=true',
      headers: { 'x-api-key': 'sk-test-1', authorization: 'Bearer tok-2', 'content-type': 'application/json' },
      body: b,
      response: { status: 200, source: 'default', mainTurn: true },
    });
    expect(recs[0]!.receivedAt).toBeGreaterThanOrEqual(before);
    expect(recs[0]!.receivedAt).toBeLessThanOrEqual(recs[1]!.receivedAt);
    expect(recs[1]).toMatchObject({ method: 'HEAD', path: '/', body: null, response: { status: 200 } });

    expect(await (await fetch(`${model.url}/_offline/requests`, { headers: control() })).json()).toEqual(recs);
    // requests() hands out copies: tests cannot corrupt the log.
    recs[0]!.method = 'X';
    expect(model.requests()[0]!.method).toBe('POST');
  });
});

describe('lifecycle', () => {
  it('listens on the requested port, refuses a taken one, and close() ends open streams', async () => {
    const other = await startOfflineModel({ port: 0 });
    expect(other.url).toBe(`http://127.0.0.1:${other.port}`);
    await expect(startOfflineModel({ port: other.port })).rejects.toThrow(/EADDRINUSE/);

    const res = await fetch(`${other.url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify(body('#offline {"text":"slow","chunks":4,"delayMs":10000}', { stream: true })),
    });
    const reading = readSse(res);
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(2000);
    const { events, error } = await reading;
    expect(error).toBeDefined();
    expect(events.length).toBeLessThan(8);
    await expect(fetch(`${other.url}/`, { method: 'HEAD' })).rejects.toThrow();
  });
});
