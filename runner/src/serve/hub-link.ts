import type WebSocket from 'ws';
import {
  HubToRunnerSchema,
  RUNNER_LINK_PING,
  RUNNER_LINK_PONG,
  RunnerCloseCode,
  RunnerToHubSchema,
  type HubToRunner,
  type RunnerToHub,
} from '@switchyard/protocol';
import { runnerError, type RunnerError } from '../errors.ts';
import type { IdentityProver } from '../identity/task-identity.ts';
import type { Logger } from '../log.ts';
import { backoffDelay } from './backoff.ts';
import type { BufferedFrame, EventBuffer } from './event-buffer.ts';
import { wallNow } from './hop-stamps.ts';
import { loadWebSocket, ReadyState } from '../ws-client.ts';

type Hello = Extract<RunnerToHub, { type: 'hello' }>;
type Welcome = Extract<HubToRunner, { type: 'welcome' }>;
export type HubRequest = Extract<
  HubToRunner,
  { type: 'user_message' | 'interrupt' | 'shutdown' | 'workspace_sync' | 'approval_decision' }
>;

export interface HubLinkOptions {
  url: string;
  sessionId: string;
  token: string;
  /** The hello to send on every (re)connect; lastSeq is filled in from the buffer, cli from `cli`. */
  hello: Omit<Hello, 'lastSeq' | 'cli'>;
  /** The CLI's state as each hello leaves (it changes between reconnects). */
  cli?: () => Hello['cli'];
  /** Signs a fresh proof of the runner's task identity for each hello (undefined: the hello has none). */
  identity?: IdentityProver | undefined;
  buffer: EventBuffer;
  backoff: { baseMs: number; maxMs: number };
  pingIntervalMs: number;
  welcomeTimeoutMs: number;
  log: Logger;
  /** `first`: this runner's first welcome ever (only then is a transcript restored). */
  onWelcome(welcome: Welcome, first: boolean): void;
  onRequest(request: HubRequest): void;
  /** The hub refused this runner for good; the link will not reconnect. */
  onRejected(error: RunnerError): void;
  random?: () => number;
  /** Bench only (SWITCHYARD_BENCH_HOPS=1): each `events` frame says when it was sent. */
  stampSends?: boolean;
}

/** Keeps one frame well below what a workerd WebSocket message may carry. */
const MAX_BATCH_CHARS = 1024 * 1024;
const MAX_BATCH_EVENTS = 1000;
const FATAL_CLOSE_CODES = new Set<number>(Object.values(RunnerCloseCode));
const FATAL_HTTP = new Set([401, 403, 404, 409]);

/** How long each dialled socket's upgrade took once answered (ms), for the 'hub link open' line. */
const upgradeMs = new WeakMap<WebSocket, number>();

/**
 * The runner's WebSocket to the hub: dials out, says hello, streams sequenced frames from the
 * buffer right behind it (the hub handles a link's frames in order, so they are taken once the
 * hello is, and a refused hello closes the socket with them still in the buffer), takes the
 * welcome's ack, and resends what the hub does not hold after every reconnect. Reconnects with
 * backoff and jitter until closed or rejected. The token goes in the Authorization header only:
 * URLs end up in access logs.
 */
export class HubLink {
  private ws: WebSocket | undefined;
  private welcomed = false;
  private everWelcomed = false;
  /** The hello went out on the current socket: sequenced frames may follow it. */
  private helloSent = false;
  /** The newest seq sent on the current socket (or known held by the hub). */
  private sentSeq = 0;
  private attempt = 0;
  private closing = false;
  private token: string;
  private lastHttpStatus: number | undefined;
  private lastInbound = 0;
  private flushQueued = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private welcomeTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private drainWaiters: Array<() => void> = [];
  private readonly o: HubLinkOptions;

  constructor(options: HubLinkOptions) {
    this.o = options;
    this.token = options.token;
  }

  /** The runner's current credential, for its HTTP calls to the edge (the durable workspace). */
  get currentToken(): string {
    return this.token;
  }

  get connected(): boolean {
    return this.welcomed;
  }

  /**
   * Opens the link to the hub now, before the runner knows what its hello says (the guard's
   * self-test is still running): the TCP/TLS and upgrade round trips overlap the set-up. Nothing
   * is sent on it until `HubLink.start` adopts it and says hello.
   */
  static async dial(o: {
    url: string;
    sessionId: string;
    token: string;
    welcomeTimeoutMs: number;
  }): Promise<WebSocket> {
    const ws = await HubLink.open(o.url, o.sessionId, o.token, o.welcomeTimeoutMs);
    // Until adopted nobody listens; an 'error' without a listener would throw. A socket that
    // failed is simply not adopted: start() dials again and meets the same answer, handled there.
    ws.on('error', () => {});
    return ws;
  }

  private static async open(url: string, sessionId: string, token: string, timeoutMs: number): Promise<WebSocket> {
    const u = new URL(url);
    u.searchParams.set('session', sessionId);
    const WebSocketClient = await loadWebSocket();
    const sentAt = performance.now();
    const ws = new WebSocketClient(u, {
      headers: { authorization: `Bearer ${token}` },
      handshakeTimeout: timeoutMs,
      maxPayload: 64 * 1024 * 1024,
      perMessageDeflate: false,
    });
    ws.once('open', () => upgradeMs.set(ws, Math.round((performance.now() - sentAt) * 10) / 10));
    return ws;
  }

  /** `early`: a socket from `HubLink.dial` for the same hub, session and token, used if it is still up. */
  start(early?: Promise<WebSocket>): void {
    void this.connect(early);
  }

  /** New frames are in the buffer. */
  notify(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // Events produced in one tick (one stdout chunk) go out as one frame.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /** Unsequenced frames (status, replies): delivered only while welcomed, else dropped. */
  send(msg: RunnerToHub): boolean {
    if (!this.welcomed || this.ws?.readyState !== ReadyState.OPEN) return false;
    const checked = RunnerToHubSchema.safeParse(msg);
    if (!checked.success) {
      // A runner bug; refusing to send it beats handing the hub a frame it must reject.
      this.o.log.error('invalid outgoing frame dropped', { type: msg.type, problem: checked.error.issues[0]?.message });
      return false;
    }
    this.ws.send(JSON.stringify(checked.data));
    return true;
  }

  /** Resolves true once every buffered frame is acked, false if `ms` pass first. */
  waitDrained(ms: number): Promise<boolean> {
    if (this.o.buffer.size === 0) return Promise.resolve(true);
    // Refused for good: no ack is coming.
    if (this.closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drainWaiters = this.drainWaiters.filter((w) => w !== done);
        resolve(false);
      }, ms);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.drainWaiters.push(done);
    });
  }

  /** Says bye (if connected) and closes for good. */
  async close(bye?: Extract<RunnerToHub, { type: 'bye' }>): Promise<void> {
    this.closing = true;
    clearTimeout(this.reconnectTimer);
    const ws = this.ws;
    if (!ws) return;
    if (bye) this.send(bye);
    if (ws.readyState === ReadyState.CLOSED) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000);
      ws.once('close', () => {
        clearTimeout(force);
        resolve();
      });
      if (ws.readyState === ReadyState.OPEN) ws.close(1000, 'bye');
      else ws.terminate();
    });
  }

  private async connect(early?: Promise<WebSocket>): Promise<void> {
    // Signed while the socket is dialled; a proof that cannot be made fails this dial only.
    const proof = this.o.identity?.prove().catch((err: unknown) => {
      this.o.log.warn('could not prove the task identity; reconnecting', {
        error: err instanceof Error ? err.message : String(err),
      });
      return null;
    });
    const dialled = await early;
    const usable =
      dialled !== undefined && (dialled.readyState === ReadyState.CONNECTING || dialled.readyState === ReadyState.OPEN);
    if (!usable) dialled?.terminate();
    const ws = usable
      ? dialled
      : this.closing
        ? undefined
        : await HubLink.open(this.o.url, this.o.sessionId, this.token, this.o.welcomeTimeoutMs);
    // Closed meanwhile (while the early socket or the client came): the socket is not wanted.
    if (ws === undefined || this.closing) {
      ws?.terminate();
      return;
    }
    this.lastHttpStatus = undefined;
    this.ws = ws;
    this.helloSent = false;
    const hello = async () => {
      const identity = await proof;
      if (ws !== this.ws || ws.readyState !== ReadyState.OPEN) return;
      if (identity === null) {
        ws.terminate();
        return;
      }
      this.lastInbound = Date.now();
      const cli = this.o.cli?.();
      const hello: Hello = {
        ...this.o.hello,
        lastSeq: this.o.buffer.lastSeq,
        ...(cli !== undefined && { cli }),
        ...(identity !== undefined && { identity }),
      };
      ws.send(JSON.stringify(RunnerToHubSchema.parse(hello)));
      this.welcomeTimer = setTimeout(() => {
        this.o.log.warn('hub sent no welcome; reconnecting', { timeoutMs: this.o.welcomeTimeoutMs });
        ws.terminate();
      }, this.o.welcomeTimeoutMs);
      // What the hub acked it holds; everything after goes out now, without waiting a round trip
      // for the welcome (a pooled runner's first answer is already waiting here).
      this.helloSent = true;
      this.sentSeq = this.o.buffer.ackedSeq;
      this.flush();
      // After the hello and what follows it: how long the dial to the edge and back took.
      this.o.log.info('hub link open', { upgradeMs: upgradeMs.get(ws) });
    };
    // An early socket may already be open; the hub says nothing before the hello, so nothing was missed.
    if (ws.readyState === ReadyState.OPEN) void hello();
    else ws.on('open', () => void hello());
    ws.on('message', (data, isBinary) => {
      if (ws !== this.ws) return;
      this.lastInbound = Date.now();
      if (isBinary) {
        this.o.log.warn('hub sent a binary frame; ignored');
        return;
      }
      this.onFrame(String(data));
    });
    ws.on('error', (err) => {
      const status = /Unexpected server response: (\d{3})/.exec(err.message)?.[1];
      if (status) this.lastHttpStatus = Number(status);
      this.o.log.debug('hub link error', { error: err.message });
    });
    ws.on('close', (code, reason) => this.onClose(ws, code, reason.toString()));
  }

  private onFrame(text: string): void {
    if (text === RUNNER_LINK_PONG) return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.o.log.warn('hub sent a frame that is not JSON; ignored', { head: text.slice(0, 100) });
      return;
    }
    const parsed = HubToRunnerSchema.safeParse(raw);
    if (!parsed.success) {
      this.rejectInvalid(raw, parsed.error.issues[0]?.message ?? 'invalid');
      return;
    }
    const msg = parsed.data;
    switch (msg.type) {
      case 'welcome':
        return this.onWelcome(msg);
      case 'ack': {
        const acked = this.o.buffer.ack(msg.seq);
        if (!acked.ok) this.o.log.error('hub ack rejected', { code: acked.error.code, message: acked.error.message });
        if (this.o.buffer.size === 0) this.releaseDrainWaiters();
        return;
      }
      case 'token':
        this.token = msg.runnerToken;
        return;
      case 'pong':
        return;
      default:
        if (!this.welcomed) {
          this.o.log.warn('hub request before welcome; ignored', { type: msg.type });
          return;
        }
        this.o.onRequest(msg);
    }
  }

  private onWelcome(welcome: Welcome): void {
    clearTimeout(this.welcomeTimer);
    const buffer = this.o.buffer;
    if (this.welcomed) {
      this.o.log.warn('hub sent a second welcome; ignored');
      return;
    }
    if (welcome.ackedSeq > buffer.lastSeq) {
      // The hub claims frames this runner never produced: it is talking to the wrong runner.
      this.reject(
        runnerError(
          'hub_protocol',
          `welcome acked seq ${welcome.ackedSeq} but this runner produced only ${buffer.lastSeq}`,
        ),
      );
      return;
    }
    if (welcome.ackedSeq < buffer.ackedSeq) {
      this.o.log.error('hub lost frames it had acked; they cannot be resent', {
        hubAckedSeq: welcome.ackedSeq,
        runnerAckedSeq: buffer.ackedSeq,
      });
    }
    buffer.ack(welcome.ackedSeq);
    // Frames sent behind the hello reach the hub after this welcome: they are not sent again.
    this.sentSeq = Math.max(welcome.ackedSeq, buffer.ackedSeq, this.sentSeq);
    if (welcome.runnerToken) this.token = welcome.runnerToken;
    this.welcomed = true;
    this.attempt = 0;
    const first = !this.everWelcomed;
    this.everWelcomed = true;
    this.o.log.info('hub link up', { ackedSeq: welcome.ackedSeq, unsent: buffer.lastSeq - this.sentSeq, first });
    this.startHeartbeat();
    this.o.onWelcome(welcome, first);
    if (buffer.size === 0) this.releaseDrainWaiters();
    this.flush();
  }

  private onClose(ws: WebSocket, code: number, reason: string): void {
    if (ws !== this.ws) return;
    clearTimeout(this.welcomeTimer);
    clearInterval(this.heartbeat);
    const wasWelcomed = this.welcomed;
    this.welcomed = false;
    this.helloSent = false;
    if (this.closing) return;
    if (FATAL_CLOSE_CODES.has(code) || (this.lastHttpStatus !== undefined && FATAL_HTTP.has(this.lastHttpStatus))) {
      const why =
        this.lastHttpStatus !== undefined
          ? `HTTP ${this.lastHttpStatus}`
          : `close code ${code}${reason ? ` (${reason})` : ''}`;
      this.closing = true;
      this.o.onRejected(runnerError('hub_rejected', `the hub refused this runner: ${why}`));
      return;
    }
    const delay = backoffDelay(this.attempt++, this.o.backoff, this.o.random);
    this.o.log.info('hub link down; reconnecting', {
      code,
      wasWelcomed,
      delayMs: delay,
      attempt: this.attempt,
      unacked: this.o.buffer.size,
    });
    this.reconnectTimer = setTimeout(() => void this.connect(), delay);
  }

  private flush(): void {
    const ws = this.ws;
    if (!this.helloSent || !ws || ws.readyState !== ReadyState.OPEN) return;
    const frames = this.o.buffer.after(this.sentSeq);
    let batch: BufferedFrame[] = [];
    let chars = 0;
    const sendBatch = () => {
      if (batch.length === 0) return;
      const events = batch.map((f) => f.json).join(',');
      ws.send(
        this.o.stampSends === true
          ? `{"type":"events","events":[${events}],"sentAt":${wallNow()}}`
          : `{"type":"events","events":[${events}]}`,
      );
      batch = [];
      chars = 0;
    };
    for (const frame of frames) {
      if (frame.kind === 'transcript') {
        sendBatch();
        ws.send(frame.json);
      } else {
        if (batch.length >= MAX_BATCH_EVENTS || (batch.length > 0 && chars + frame.json.length > MAX_BATCH_CHARS))
          sendBatch();
        batch.push(frame);
        chars += frame.json.length;
      }
      this.sentSeq = frame.seq;
    }
    sendBatch();
  }

  private startHeartbeat(): void {
    clearInterval(this.heartbeat);
    const interval = this.o.pingIntervalMs;
    this.heartbeat = setInterval(() => {
      const ws = this.ws;
      if (!ws || ws.readyState !== ReadyState.OPEN) return;
      // Silence for two intervals means the TCP connection is dead without having said so.
      if (Date.now() - this.lastInbound > 2 * interval) {
        this.o.log.warn('hub link silent; dropping it', { silentMs: Date.now() - this.lastInbound });
        ws.terminate();
        return;
      }
      ws.send(RUNNER_LINK_PING);
    }, interval);
    this.heartbeat.unref();
  }

  private rejectInvalid(raw: unknown, problem: string): void {
    const r = raw as { type?: unknown; messageId?: unknown; requestId?: unknown } | null;
    const id =
      typeof r?.messageId === 'string' ? r.messageId : typeof r?.requestId === 'string' ? r.requestId : undefined;
    this.o.log.warn('hub sent an invalid frame', { type: typeof r?.type === 'string' ? r.type : undefined, problem });
    if (id && this.welcomed) {
      this.send({
        type: 'reject',
        inReplyTo: id,
        error: runnerError('invalid_message', `invalid ${String(r?.type)}: ${problem}`),
      });
    }
  }

  private reject(error: RunnerError): void {
    this.closing = true;
    this.ws?.close(RunnerCloseCode.protocolError, error.code);
    this.o.onRejected(error);
  }

  private releaseDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}
