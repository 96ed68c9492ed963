// The loopback credential-injecting proxy. The CLI is pointed at it with a
// per-session random key (claude: ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY; pi:
// its models.json provider). The proxy accepts only that key, swaps it for
// the real provider key (or none, for a keyless endpoint such as the offline
// model) and streams the Messages API call to the upstream. The real key
// lives only in this process's memory: never in the CLI's environment, argv
// or files, never in a log line or an error body.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../http-body.ts';
import { requestFor } from '../http-client.ts';
import { jsonValue } from '../json.ts';
import { upstreamAgent } from './upstream-agent.ts';
import { warmUpReply, warmUpTokenCount } from './warm-up-reply.ts';

// Not `import … from 'node:http'`: an ES import builds the module's namespace, which runs http's
// lazy `WebSocket` getter and loads Node's bundled undici into every runner (docs/DESIGN.md
// "Runner memory"). The CommonJS exports object alone does not.
const { createServer } = process.getBuiltinModule('node:http');

export interface CredentialProxyOptions {
  /** Where model calls go: SWITCHYARD_MODEL_URL or the provider's base URL. A path prefix is kept. */
  upstream: string;
  /** The real key, sent upstream as x-api-key. Absent: nothing is sent (keyless endpoints). */
  apiKey?: string | undefined;
  /** Loopback only. */
  host?: '127.0.0.1' | '::1';
  /**
   * Listen on this unix socket instead of a loopback port (bubblewrap: bound into the CLI's
   * network namespace, which has no other way out). Its directory should be private (0700).
   */
  socketPath?: string;
  /**
   * Answer Messages calls here with a canned one-word reply instead of forwarding them, until
   * `forwardUpstream()`: a pooled runner's CLI takes its first turn before any session exists,
   * and nothing of it may reach the provider (docs/DESIGN.md "Warm runner pool").
   */
  answerLocally?: boolean;
  /**
   * Told of every model call that failed upstream (an error status, or no connection), with what
   * an operator needs and the person chatting must not read: the upstream host, the status and the
   * start of the provider's answer. Never the key.
   */
  onUpstreamProblem?: (problem: UpstreamProblem) => void;
}

export interface UpstreamProblem {
  /** `host[:port]` of the upstream. */
  upstream: string;
  path: string;
  /** The upstream's error status; absent when no connection was made. */
  status?: number;
  /** The connection error's code (`ECONNREFUSED`), when no connection was made. */
  code?: string;
  /** The first `UPSTREAM_PROBLEM_BODY_CHARS` of the provider's error answer, whitespace collapsed. */
  body?: string;
}

/** How much of a provider's error answer an operator's log line keeps. */
export const UPSTREAM_PROBLEM_BODY_CHARS = 300;

export interface CredentialProxy {
  /** Base URL of the TCP listener; with `socketPath`, `http://localhost` (the socket carries plain HTTP). */
  url: string;
  /** The unix socket, when listening on one. */
  socketPath?: string;
  /** The per-session key the CLI presents; worthless anywhere but this proxy. */
  sessionKey: string;
  /** From now on every call goes upstream (a no-op unless started with `answerLocally`). */
  forwardUpstream(): void;
  /**
   * A call is coming within milliseconds (the runner wrote a message to the CLI, answered its
   * approval, saw its tool's result): its upstream connection is opened now unless one is free.
   * Nothing while calls are answered locally.
   */
  prepareCall(): void;
  close(): Promise<void>;
}

/**
 * How long the proxy keeps a CLI's idle connection, and tells it so (`Keep-Alive: timeout=600`):
 * undici's longest (pi keeps a connection until 2 s before the server's hint; claude until the
 * server closes it). With Node's 5 s default each CLI opened a new connection for every call after
 * a pause: under bubblewrap a new socat child and unix connection on the way of a person's message.
 */
export const CLI_KEEP_ALIVE_MS = 600_000;

/** How much of a call answered locally is kept: only its `stream` and `model` fields, or its size, are read. */
const LOCAL_BODY_MAX = 8 * 1024 * 1024;

/** What the CLIs call: the Messages API (streaming or not), token counting, the model list. */
const ROUTES: Array<{ method: string; path: RegExp }> = [
  { method: 'POST', path: /^\/v1\/messages$/ },
  { method: 'POST', path: /^\/v1\/messages\/count_tokens$/ },
  { method: 'GET', path: /^\/v1\/models(\/[A-Za-z0-9._:-]+)?$/ },
];

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);
/** Credentials the CLI might present; none of them travel upstream. */
const CREDENTIAL_HEADERS = new Set(['x-api-key', 'authorization', 'cookie']);

/** Hands `problem` on with the start of `up`'s body once it ended (it is piped to the CLI meanwhile). */
function reportProblem(up: IncomingMessage, problem: UpstreamProblem, report: (p: UpstreamProblem) => void): void {
  let head = '';
  up.on('data', (chunk: Buffer) => {
    if (head.length < UPSTREAM_PROBLEM_BODY_CHARS * 4) head += chunk.toString('utf8');
  });
  up.on('close', () => {
    const body = head.replace(/\s+/g, ' ').trim().slice(0, UPSTREAM_PROBLEM_BODY_CHARS);
    report({ ...problem, ...(body !== '' && { body }) });
  });
}

export async function startCredentialProxy(o: CredentialProxyOptions): Promise<CredentialProxy> {
  const upstream = new URL(o.upstream);
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:')
    throw new Error('credential proxy: the upstream must be an http(s) URL');
  const sessionKey = `sy-session-${randomBytes(24).toString('base64url')}`;
  const expected = Buffer.from(sessionKey);
  const realKey = o.apiKey;
  const prefix = upstream.pathname.replace(/\/+$/, '');
  let answerLocally = o.answerLocally === true;
  const upstreamConnections = upstreamAgent(upstream);

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    // claude checks connectivity with HEAD / before its first call; answer it here.
    if ((req.method === 'HEAD' || req.method === 'GET') && url.pathname === '/') {
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(req.method === 'GET' ? 'switchyard credential proxy\n' : undefined);
      return;
    }
    if (!presentedKeyMatches(req.headers, expected))
      return fail(res, 401, 'authentication_error', 'invalid session key for the Switchyard credential proxy');
    if (!ROUTES.some((r) => r.method === req.method && r.path.test(url.pathname))) {
      return fail(res, 404, 'not_found_error', `the credential proxy does not forward ${req.method} ${url.pathname}`);
    }
    if (answerLocally) return answerHere(req, res, url.pathname);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name) || CREDENTIAL_HEADERS.has(name)) continue;
      headers[name] = value;
    }
    if (realKey !== undefined) headers['x-api-key'] = realKey;
    const out = requestFor(upstream)(
      {
        protocol: upstream.protocol,
        hostname: upstream.hostname.replace(/^\[|\]$/g, ''),
        port: upstream.port || undefined,
        method: req.method,
        path: `${prefix}${url.pathname}${url.search}`,
        headers: { ...headers, host: upstream.host },
        agent: upstreamConnections.agent,
      },
      (up) => {
        const back: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(up.headers))
          if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
        res.writeHead(up.statusCode ?? 502, back);
        up.pipe(res);
        up.on('error', () => res.destroy());
        if ((up.statusCode ?? 502) >= 400 && o.onUpstreamProblem !== undefined)
          reportProblem(
            up,
            { upstream: upstream.host, path: url.pathname, status: up.statusCode ?? 502 },
            o.onUpstreamProblem,
          );
      },
    );
    out.on('error', (err) => {
      o.onUpstreamProblem?.({
        upstream: upstream.host,
        path: url.pathname,
        code: (err as NodeJS.ErrnoException).code ?? 'error',
      });
      if (res.headersSent) res.destroy();
      // No host and no key: the CLI may repeat this text to the person chatting (pi's retry reason).
      else
        fail(
          res,
          502,
          'api_error',
          `the model endpoint is unreachable (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
    });
    // The CLI gave up (interrupt, exit): stop the upstream call too.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  server.keepAliveTimeout = CLI_KEEP_ALIVE_MS;

  const forwardUpstream = () => {
    // The first forwarded call comes within milliseconds: its connection is opened now.
    if (answerLocally) upstreamConnections.preconnect();
    answerLocally = false;
  };
  // A free connection is closed after 5 s idle (upstream-agent.ts), so a call after a pause (a
  // person's next message, a long tool run) would otherwise wait for a new one (TCP, and TLS).
  const prepareCall = () => {
    if (!answerLocally) upstreamConnections.preconnect();
  };
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      upstreamConnections.destroy();
    });
  if (o.socketPath !== undefined) {
    const socketPath = o.socketPath;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    return { url: 'http://localhost', socketPath, sessionKey, forwardUpstream, prepareCall, close };
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, o.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    sessionKey,
    forwardUpstream,
    prepareCall,
    close,
  };
}

/** While no session is served: a Messages call gets the canned reply, a token count an estimate, the rest 503. */
function answerHere(req: IncomingMessage, res: ServerResponse<IncomingMessage>, path: string): void {
  if (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')
    return fail(res, 503, 'api_error', 'the runner serves no session yet; nothing is forwarded');
  const answer = (read: { body: Buffer }) => {
    const reply =
      path === '/v1/messages' ? warmUpReply(jsonValue(read.body.toString('utf8'))) : warmUpTokenCount(read.body.length);
    res.writeHead(200, { 'content-type': reply.contentType }).end(reply.body);
  };
  readBody(req, LOCAL_BODY_MAX).then(answer, () => res.destroy());
}

function presentedKeyMatches(headers: IncomingHttpHeaders, expected: Buffer): boolean {
  const auth = headers.authorization;
  const bearer = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
  for (const candidate of [headers['x-api-key'], bearer]) {
    if (typeof candidate !== 'string') continue;
    const got = Buffer.from(candidate);
    if (got.length === expected.length && timingSafeEqual(got, expected)) return true;
  }
  return false;
}

function fail(res: ServerResponse<IncomingMessage>, status: number, type: string, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ type: 'error', error: { type, message } }));
}
