import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type ApprovalDecision,
  type ApprovalMode,
  HubToRunnerSchema,
  RUNNER_LINK_PING,
  RUNNER_LINK_PONG,
  RunnerCloseCode,
  RunnerToHubSchema,
  type HubToRunner,
  type RunnerStatus,
  type Transcript,
} from '@switchyard/protocol';
import type { Bye, ContractHub, ContractSession, Hello, HubEvent, HubFaults, Reply } from './contract-hub.ts';

// A hub inside the test process that speaks the wire schemas: auth by bearer
// token, hello/welcome, durable per-runner logs with dedupe by seq, acks,
// transcripts, replies, and fault injection (cut links, lazy acks, paused acks).

const CONNECT_PATH = '/internal/runner/connect';
const REPLY_TIMEOUT_MS = 10_000;

interface RunnerLog {
  runnerId: string;
  /** Frames kept (durable or pending ack), contiguous from seq 1. */
  frames: Array<{ seq: number; event?: HubEvent; transcript?: Transcript }>;
  ackedSeq: number;
}

class TestSession implements ContractSession {
  readonly sessionId: string;
  readonly runnerEnv: Record<string, string>;
  readonly token: string;
  socket: WebSocket | undefined;
  socketRunnerId: string | undefined;
  /** The socket on which the runner has spoken after welcome (it sends its status first). */
  private readySocket: WebSocket | undefined;
  ackEvery = 1;
  acksPaused = false;
  /**
   * Sent in every welcome when set. 0 (nothing ever stored), as the edge's welcome says of a new
   * session; a test sets it to undefined for a hub that does not say (the runner then restores).
   */
  workspaceGeneration: number | undefined = 0;
  /** Sent in every welcome when set, as the edge sends the session's approval mode. */
  approvals: ApprovalMode | undefined;
  /** While set, a hello is answered only when the hold is lifted (a hub slow to welcome). */
  welcomeHeld = false;
  private heldWelcome: (() => void) | undefined;
  private sinceAck = 0;
  private readonly runners: RunnerLog[] = [];
  private readonly statusLog: RunnerStatus[] = [];
  private readonly helloLog: Hello[] = [];
  private readonly byeLog: Bye[] = [];
  private readonly violationLog: string[] = [];
  private readonly replies = new Map<string, Reply>();
  private readonly changes = new EventEmitter();

  constructor(sessionId: string, url: string) {
    this.sessionId = sessionId;
    this.token = randomBytes(24).toString('hex');
    this.runnerEnv = { SWITCHYARD_HUB_URL: url, SWITCHYARD_SESSION_ID: sessionId, SWITCHYARD_RUNNER_TOKEN: this.token };
    this.changes.setMaxListeners(100);
  }

  // ---- ContractSession ----

  async sendMessage(text: string, opts: { messageId?: string } = {}): Promise<{ messageId: string; reply: Reply }> {
    const messageId = opts.messageId ?? `m-${randomUUID()}`;
    // A resent id must wait for its new answer, not find the old one.
    this.replies.delete(messageId);
    await this.request({ type: 'user_message', messageId, message: { text } });
    return { messageId, reply: await this.waitReply(messageId) };
  }

  async interrupt(): Promise<Reply> {
    const requestId = `i-${randomUUID()}`;
    await this.request({ type: 'interrupt', requestId });
    return this.waitReply(requestId);
  }

  async decide(approvalId: string, decision: ApprovalDecision): Promise<Reply> {
    await this.request({ type: 'approval_decision', approvalId, decision });
    return this.waitReply(approvalId);
  }

  async shutdown(reason = 'test'): Promise<void> {
    await this.request({ type: 'shutdown', reason });
  }

  events(): HubEvent[] {
    return this.runners.flatMap((r) => r.frames.flatMap((f) => (f.event ? [f.event] : [])));
  }

  transcripts() {
    const out: ReturnType<ContractSession['transcripts']> = [];
    let events = 0;
    for (const r of this.runners) {
      for (const f of r.frames) {
        if (f.event) events++;
        if (f.transcript) out.push({ runnerId: r.runnerId, seq: f.seq, afterEvents: events, transcript: f.transcript });
      }
    }
    return out;
  }

  statuses(): RunnerStatus[] {
    return [...this.statusLog];
  }
  hellos(): Hello[] {
    return [...this.helloLog];
  }
  byes(): Bye[] {
    return [...this.byeLog];
  }
  violations(): string[] {
    return [...this.violationLog];
  }

  waitFor<T>(probe: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const v = probe();
        if (v === undefined || v === false) return false;
        cleanup();
        resolve(v);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        const tail = this.events()
          .slice(-5)
          .map((e) =>
            e.event.type === 'error' ? `error(${e.event.code}: ${e.event.message.slice(0, 120)})` : e.event.type,
          );
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what} (last events: ${tail.join(', ') || 'none'}; statuses: ${this.statusLog.map((s) => `${s.state}/${s.cli}`).join(' ')})`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.changes.off('change', check);
      };
      this.changes.on('change', check);
      check();
    });
  }

  // ---- wire handling ----

  attach(ws: WebSocket): void {
    ws.on('message', (data) => this.onFrame(ws, String(data)));
    ws.on('close', () => {
      if (this.socket === ws) {
        this.socket = undefined;
        this.socketRunnerId = undefined;
      }
      this.changed();
    });
  }

  private onFrame(ws: WebSocket, text: string): void {
    if (text === RUNNER_LINK_PING) {
      ws.send(RUNNER_LINK_PONG);
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return this.violation(ws, `frame is not JSON: ${text.slice(0, 80)}`);
    }
    const parsed = RunnerToHubSchema.safeParse(raw);
    if (!parsed.success) return this.violation(ws, `invalid frame: ${parsed.error.issues[0]?.message}`);
    const msg = parsed.data;
    if (msg.type !== 'hello' && this.socket !== ws) return; // a superseded socket's last words
    switch (msg.type) {
      case 'hello':
        return this.onHello(ws, msg);
      case 'events':
        for (const e of msg.events) {
          const ev: HubEvent = {
            runnerId: this.socketRunnerId ?? '?',
            seq: e.seq,
            event: e.event,
            ...(e.messageId !== undefined && { messageId: e.messageId }),
            ...(e.hops !== undefined && { hops: e.hops }),
          };
          if (!this.append(ws, e.seq, { event: ev })) return;
        }
        this.maybeAck(ws);
        break;
      case 'transcript':
        if (!this.append(ws, msg.seq, { transcript: msg.transcript })) return;
        this.maybeAck(ws);
        break;
      case 'status':
        this.statusLog.push(msg);
        this.readySocket = ws;
        break;
      case 'accepted':
        this.replies.set(msg.inReplyTo, { accepted: true, ...(msg.duplicate && { duplicate: true }) });
        break;
      case 'reject':
        this.replies.set(msg.inReplyTo, { accepted: false, error: msg.error });
        break;
      case 'bye':
        this.byeLog.push(msg);
        break;
      case 'ping':
        ws.send(RUNNER_LINK_PONG);
        break;
    }
    this.changed();
  }

  private onHello(ws: WebSocket, hello: Hello): void {
    if (hello.sessionId !== this.sessionId)
      return this.violation(ws, `hello for session ${hello.sessionId} on ${this.sessionId}'s link`);
    this.helloLog.push(hello);
    const previous = this.socket;
    if (previous && previous !== ws) {
      // One runner per session: a newer runner replaces the old one, which must stop.
      if (this.socketRunnerId !== hello.runnerId) previous.close(RunnerCloseCode.superseded, 'superseded');
      else previous.terminate();
    }
    this.socket = ws;
    this.socketRunnerId = hello.runnerId;
    let log = this.runners.find((r) => r.runnerId === hello.runnerId);
    const isNew = !log;
    if (!log) {
      log = { runnerId: hello.runnerId, frames: [], ackedSeq: 0 };
      this.runners.push(log);
    }
    const high = log.frames.at(-1)?.seq ?? 0;
    if (hello.lastSeq < high)
      return this.violation(ws, `hello.lastSeq ${hello.lastSeq} below what the hub holds (${high})`);
    const transcript = isNew ? this.transcripts().at(-1)?.transcript : undefined;
    // What the hub holds counts as acked: the runner resends only what follows.
    log.ackedSeq = high;
    this.sinceAck = 0;
    const welcome = () =>
      this.send(ws, {
        type: 'welcome',
        ackedSeq: high,
        ...(transcript && { transcript }),
        ...(this.workspaceGeneration !== undefined && { workspaceGeneration: this.workspaceGeneration }),
        ...(this.approvals !== undefined && { approvals: this.approvals }),
      });
    if (this.welcomeHeld) this.heldWelcome = welcome;
    else welcome();
    this.changed();
  }

  holdWelcome(hold: boolean): void {
    this.welcomeHeld = hold;
    if (hold) return;
    const welcome = this.heldWelcome;
    this.heldWelcome = undefined;
    welcome?.();
  }

  private append(ws: WebSocket, seq: number, frame: { event?: HubEvent; transcript?: Transcript }): boolean {
    const log = this.runners.find((r) => r.runnerId === this.socketRunnerId);
    if (!log) {
      this.violation(ws, 'sequenced frame before hello');
      return false;
    }
    const high = log.frames.at(-1)?.seq ?? 0;
    if (seq <= high) {
      this.violationLog.push(`duplicate seq ${seq} (hub holds up to ${high})`);
      return true;
    }
    if (seq !== high + 1) {
      this.violation(ws, `gap: got seq ${seq} after ${high}`);
      return false;
    }
    log.frames.push({ seq, ...frame });
    return true;
  }

  private maybeAck(ws: WebSocket): void {
    this.sinceAck++;
    if (this.acksPaused || this.sinceAck < this.ackEvery) return;
    this.ackNow(ws);
  }

  ackNow(ws = this.socket): void {
    const log = this.runners.find((r) => r.runnerId === this.socketRunnerId);
    if (!ws || !log) return;
    this.sinceAck = 0;
    log.ackedSeq = log.frames.at(-1)?.seq ?? 0;
    this.send(ws, { type: 'ack', seq: log.ackedSeq });
  }

  cut(dropUnacked: boolean): void {
    const ws = this.socket;
    if (!ws) return;
    if (dropUnacked) {
      const log = this.runners.find((r) => r.runnerId === this.socketRunnerId);
      // Frames received but not acked were never durable: a hub that dies forgets them.
      if (log) log.frames = log.frames.filter((f) => f.seq <= log.ackedSeq);
    }
    this.socket = undefined;
    this.socketRunnerId = undefined;
    ws.terminate();
    this.changed();
  }

  private violation(ws: WebSocket, what: string): void {
    this.violationLog.push(what);
    ws.close(RunnerCloseCode.protocolError, what.slice(0, 100));
    this.changed();
  }

  private send(ws: WebSocket, msg: HubToRunner): void {
    ws.send(JSON.stringify(HubToRunnerSchema.parse(msg)));
  }

  private async request(msg: HubToRunner): Promise<void> {
    await this.waitFor(() => this.socket !== undefined && this.readySocket === this.socket, 'a welcomed runner');
    if (!this.socket) throw new Error('no runner connected');
    this.send(this.socket, msg);
  }

  private async waitReply(id: string): Promise<Reply> {
    return this.waitFor(() => this.replies.get(id), `a reply to ${id}`, REPLY_TIMEOUT_MS);
  }

  changed(): void {
    this.changes.emit('change');
  }
}

export class TestHub implements ContractHub {
  readonly name = 'test-hub';
  readonly url: string;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly sessions = new Map<string, TestSession>();
  /** Sessions whose upgrades are refused with 503 (a hub that is down). */
  private readonly refusing = new Set<string>();
  /** Called as a session's runner dials in, before the upgrade is answered. */
  private readonly upgradeObservers = new Map<string, () => void>();

  private constructor(server: Server, wss: WebSocketServer, url: string) {
    this.server = server;
    this.wss = wss;
    this.url = url;
  }

  /** Answers the hub's HTTP requests (the workspace store's); unset, every one is a 404. */
  http: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

  static async start(): Promise<TestHub> {
    const server = createServer((req, res) => {
      if (hub.http !== undefined) hub.http(req, res);
      else res.writeHead(404).end();
    });
    const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const hub = new TestHub(server, wss, `ws://127.0.0.1:${port}${CONNECT_PATH}`);
    server.on('upgrade', (req, socket, head) => hub.upgrade(req, socket, head));
    return hub;
  }

  async newSession(): Promise<TestSession> {
    const id = `s-${randomUUID()}`;
    const session = new TestSession(id, this.url);
    this.sessions.set(id, session);
    return session;
  }

  readonly faults: HubFaults & {
    refuse(sessionId: string, refuse: boolean): void;
    ackNow(sessionId: string): void;
    holdWelcome(sessionId: string, hold: boolean): void;
    onUpgrade(sessionId: string, observe: () => void): void;
  } = {
    cutLink: (sessionId, opts) => this.session(sessionId).cut(opts?.dropUnacked ?? false),
    pauseAcks: (sessionId, paused) => {
      this.session(sessionId).acksPaused = paused;
    },
    setAckEvery: (sessionId, n) => {
      this.session(sessionId).ackEvery = n;
    },
    refuse: (sessionId, refuse) => {
      if (refuse) this.refusing.add(sessionId);
      else this.refusing.delete(sessionId);
    },
    ackNow: (sessionId) => this.session(sessionId).ackNow(),
    holdWelcome: (sessionId, hold) => this.session(sessionId).holdWelcome(hold),
    onUpgrade: (sessionId, observe) => {
      this.upgradeObservers.set(sessionId, observe);
    },
  };

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private session(id: string): TestSession {
    const s = this.sessions.get(id);
    if (!s) throw new Error(`no session ${id}`);
    return s;
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://hub');
    const deny = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (url.pathname !== CONNECT_PATH) return deny(404, 'Not Found');
    const session = this.sessions.get(url.searchParams.get('session') ?? '');
    if (!session) return deny(404, 'Not Found');
    if (req.headers.authorization !== `Bearer ${session.token}`) return deny(401, 'Unauthorized');
    this.upgradeObservers.get(session.sessionId)?.();
    if (this.refusing.has(session.sessionId)) return deny(503, 'Service Unavailable');
    this.wss.handleUpgrade(req, socket, head, (ws) => session.attach(ws));
  }
}
