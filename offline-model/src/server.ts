// The offline model's HTTP side: routing, recording, the script queue, and
// writing what script.ts decided in the shape sse.ts encoded.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { inputTokens, isMainTurn, MessagesRequestSchema } from './request.ts';
import { decideReply, ScriptSchema } from './script.ts';
import type { MessageReply, ReplySource, Script } from './script.ts';
import { encodeError, encodeMessage, encodeStream, totalDelayMs } from './sse.ts';

export type RecordedRequest = {
  method: string;
  /** Path without the query string. */
  path: string;
  /** The raw request target, query included (claude adds `?beta=true`). */
  url: string;
  /** Lower-cased names; api key headers are kept so tests can assert which key arrived. */
  headers: Record<string, string>;
  /** Parsed JSON body, or null when there was none or it did not parse. */
  body: unknown;
  /** Epoch milliseconds. */
  receivedAt: number;
  /** Filled in once answered: what the model replied and why. */
  response?: { status: number; source?: ReplySource; mainTurn?: boolean };
};

export type StartOptions = {
  port?: number;
  host?: '127.0.0.1';
  /**
   * The bearer token the `/_offline/*` control routes require (they show every session's prompts
   * and script what the model answers). Default: a random one, readable as `controlToken`.
   */
  controlToken?: string;
};

export type OfflineModel = {
  url: string;
  port: number;
  /** `Authorization: Bearer <controlToken>` opens the `/_offline/*` routes. */
  controlToken: string;
  /** Every non-admin request so far, oldest first (copies). */
  requests(): RecordedRequest[];
  /** Appends scripts to the queue consumed by main-turn requests. Throws on an invalid script. */
  enqueue(...scripts: Script[]): void;
  /** Empties the queue and the request log. */
  reset(): void;
  close(): Promise<void>;
};

const MAX_BODY_BYTES = 64 * 1024 * 1024;

const QueueBody = z.union([z.array(ScriptSchema), ScriptSchema.transform((s) => [s])]);

class HttpFailure extends Error {
  status: number;
  errorType: string;
  constructor(status: number, errorType: string, message: string) {
    super(message);
    this.status = status;
    this.errorType = errorType;
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpFailure(413, 'request_too_large', 'Request body too large.'));
        req.destroy();
        return;
      }
      parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpFailure(400, 'invalid_request_error', `Request body is not valid JSON: ${(e as Error).message}`);
  }
}

function flatHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: http.ServerResponse, status: number, errorType: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type: errorType, message } });
}

export async function startOfflineModel(options: StartOptions = {}): Promise<OfflineModel> {
  const host = options.host ?? '127.0.0.1';
  const controlToken = options.controlToken ?? randomBytes(24).toString('base64url');
  if (controlToken.length < 16) throw new Error('the offline model control token must be at least 16 characters');
  const expectedAuth = Buffer.from(`Bearer ${controlToken}`);
  const controlAllowed = (req: http.IncomingMessage): boolean => {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === expectedAuth.length && timingSafeEqual(got, expectedAuth);
  };
  let recorded: RecordedRequest[] = [];
  let queue: Script[] = [];
  let seq = 0;
  // Aborted by close(), so a paced stream's pending pause doesn't outlive the server.
  const closing = new AbortController();

  /** Waits, but gives up early when the client hangs up or the server closes; false if so. */
  async function pause(ms: number, res: http.ServerResponse): Promise<boolean> {
    if (ms <= 0) return !res.destroyed;
    const hangUp = new AbortController();
    const onClose = (): void => hangUp.abort();
    res.once('close', onClose);
    try {
      await sleep(ms, undefined, { signal: AbortSignal.any([hangUp.signal, closing.signal]) });
    } catch {
      // aborted: fall through to the destroyed check
    } finally {
      res.off('close', onClose);
    }
    return !res.destroyed && !closing.signal.aborted;
  }

  async function handleMessages(res: http.ServerResponse, rec: RecordedRequest, body: unknown): Promise<void> {
    const parsed = MessagesRequestSchema.safeParse(body);
    if (!parsed.success) {
      throw new HttpFailure(400, 'invalid_request_error', z.prettifyError(parsed.error).replace(/\s+/g, ' '));
    }
    const request = parsed.data;
    const mainTurn = isMainTurn(request);
    const queued = mainTurn ? queue.shift() : undefined;
    const reply = decideReply(request, { seq: ++seq, ...(queued ? { queued } : {}) });
    rec.response = { status: reply.kind === 'error' ? reply.status : 200, source: reply.source, mainTurn };

    if (reply.kind === 'error') {
      const e = encodeError(reply);
      sendJson(res, e.status, e.body, e.headers);
      return;
    }
    const ids = { 'request-id': reply.id.replace(/^msg_/, 'req_') };
    if (request.stream === true) await stream(res, reply, ids);
    else await respond(res, reply, ids);
  }

  async function stream(res: http.ServerResponse, reply: MessageReply, headers: Record<string, string>): Promise<void> {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
    for (const chunk of encodeStream(reply)) {
      if (res.destroyed) return; // the client hung up (an interrupt): stop writing
      if (chunk.kind === 'cut') {
        // Everything before the cut has been flushed (awaited below), so the client really sees a partial stream.
        res.socket?.destroy();
        return;
      }
      if (!(await pause(chunk.delayMs, res))) return;
      await new Promise<void>((resolve) => res.write(chunk.data, () => resolve()));
    }
    res.end();
  }

  async function respond(
    res: http.ServerResponse,
    reply: MessageReply,
    headers: Record<string, string>,
  ): Promise<void> {
    if (!(await pause(totalDelayMs(reply), res))) return;
    if (reply.steps.some((s) => s.type === 'cut')) {
      // Promise the whole body, deliver half: the client sees a truncated response.
      const text = JSON.stringify(encodeMessage(reply));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
      res.write(text.slice(0, Math.floor(text.length / 2)), () => res.socket?.destroy());
      return;
    }
    sendJson(res, 200, encodeMessage(reply), headers);
  }

  async function handleAdmin(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<void> {
    if (!controlAllowed(req)) {
      throw new HttpFailure(
        401,
        'authentication_error',
        'the offline model control routes need Authorization: Bearer <control token> (SWITCHYARD_OFFLINE_CONTROL_TOKEN)',
      );
    }
    if (req.method === 'POST' && path === '/_offline/queue') {
      const parsed = QueueBody.safeParse(parseJson(await readBody(req)));
      if (!parsed.success)
        throw new HttpFailure(400, 'invalid_request_error', z.prettifyError(parsed.error).replace(/\s+/g, ' '));
      queue.push(...parsed.data);
      sendJson(res, 200, { queued: queue.length });
    } else if (req.method === 'GET' && path === '/_offline/queue') {
      sendJson(res, 200, queue);
    } else if (req.method === 'GET' && path === '/_offline/requests') {
      sendJson(res, 200, recorded);
    } else if (req.method === 'POST' && path === '/_offline/reset') {
      await readBody(req);
      reset();
      sendJson(res, 200, { ok: true });
    } else {
      throw new HttpFailure(404, 'not_found_error', `Not found: ${req.method} ${path}`);
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (path.startsWith('/_offline/')) return handleAdmin(req, res, path);

    const rec: RecordedRequest = {
      method,
      path,
      url,
      headers: flatHeaders(req.headers),
      body: null,
      receivedAt: Date.now(),
    };
    recorded.push(rec);
    try {
      await route(req, res, rec);
    } catch (e) {
      rec.response ??= { status: e instanceof HttpFailure ? e.status : 500 };
      throw e;
    }
  }

  async function route(req: http.IncomingMessage, res: http.ServerResponse, rec: RecordedRequest): Promise<void> {
    const { method, path } = rec;
    const raw = await readBody(req);
    if (raw !== '') {
      try {
        rec.body = JSON.parse(raw);
      } catch {
        // stays null; a route that needs a body answers 400 below
      }
    }
    const ok = (body: unknown): void => {
      rec.response = { status: 200 };
      sendJson(res, 200, body);
    };
    if ((method === 'HEAD' && path === '/') || ((method === 'HEAD' || method === 'GET') && path === '/api/hello')) {
      ok({ ok: true });
    } else if (method === 'POST' && (path === '/v1/messages' || path === '/v1/messages/count_tokens')) {
      const body = parseJson(raw);
      if (path === '/v1/messages') return handleMessages(res, rec, body);
      const parsed = MessagesRequestSchema.safeParse(body);
      if (!parsed.success)
        throw new HttpFailure(400, 'invalid_request_error', z.prettifyError(parsed.error).replace(/\s+/g, ' '));
      ok({ input_tokens: inputTokens(parsed.data) });
    } else {
      throw new HttpFailure(404, 'not_found_error', `Not found: ${method} ${path}`);
    }
  }

  function reset(): void {
    recorded = [];
    queue = [];
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const f = e instanceof HttpFailure ? e : new HttpFailure(500, 'api_error', `Offline model failure: ${String(e)}`);
      if (res.headersSent) res.destroy();
      else sendError(res, f.status, f.errorType, f.message);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://${host}:${port}`,
    port,
    controlToken,
    requests: () => structuredClone(recorded),
    enqueue: (...scripts) => {
      queue.push(...scripts.map((s) => ScriptSchema.parse(s)));
    },
    reset,
    close: () =>
      new Promise<void>((resolve, reject) => {
        closing.abort();
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets and paced streams would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}
