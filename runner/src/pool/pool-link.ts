import { encodeProofHeader, RUNNER_LINK_PING, RUNNER_PROOF_HEADER } from '@switchyard/protocol';
import { PoolClaimSchema, PoolCloseCode, type PoolClaim, type PoolHello } from '@switchyard/protocol/pool';
import type WebSocket from 'ws';
import type { IdentityProver } from '../identity/task-identity.ts';
import { jsonValue } from '../json.ts';
import type { Logger } from '../log.ts';
import { backoffDelay } from '../serve/backoff.ts';
import { loadWebSocket } from '../ws-client.ts';

// A pooled runner's one link to the pool coordinator (docs/DESIGN.md "Warm runner pool"): dial
// with the pool token and the proof of its task identity, say pool_hello, keep the link alive, and
// wait for the one claim. Any end of the link before a claim ends the pooled runner (the
// coordinator launches a replacement), but one: a link refused before it opened because its proof
// could not be checked just now (`tryAgainLater`) is dialled again, with backoff and a new proof.

export type PoolWait = { kind: 'claimed'; claim: PoolClaim } | { kind: 'ended'; code: number; reason: string };

export interface PoolLinkOptions {
  url: string;
  token: string;
  hello: PoolHello;
  /** Proves the runner's task identity in the link's upgrade (absent: no proof is sent). */
  identity: IdentityProver | undefined;
  pingIntervalMs: number;
  /** How long the dial may take (the link's welcome timeout). */
  handshakeTimeoutMs: number;
  /** The wait before dialling again after `tryAgainLater` (the hub link's backoff). */
  backoff: { baseMs: number; maxMs: number };
  log: Logger;
}

export class PoolLink {
  private ws: WebSocket | undefined;
  private ping: NodeJS.Timeout | undefined;
  private redial: NodeJS.Timeout | undefined;
  private attempt = 0;
  private settled = false;
  private resolve!: (result: PoolWait) => void;
  /** Resolves once: the claim, or how the link ended. */
  readonly result = new Promise<PoolWait>((r) => {
    this.resolve = r;
  });

  private readonly o: PoolLinkOptions;

  constructor(options: PoolLinkOptions) {
    this.o = options;
  }

  async start(): Promise<void> {
    // The coordinator checks the proof before the link gets a socket, so it goes with the upgrade.
    // A proof that cannot be made ends the wait (the coordinator launches a replacement).
    const [WebSocketClient, proof] = await Promise.all([
      loadWebSocket(),
      this.o.identity?.prove().catch((err: unknown) => {
        this.o.log.error('pooled runner: could not prove the task identity', {
          error: err instanceof Error ? err.message : String(err),
        });
        return null;
      }),
    ]);
    if (this.settled) return;
    if (proof === null) return this.close('no proof of the task identity');
    const ws = new WebSocketClient(this.o.url, {
      headers: {
        authorization: `Bearer ${this.o.token}`,
        ...(proof !== undefined && { [RUNNER_PROOF_HEADER]: encodeProofHeader(proof) }),
      },
      handshakeTimeout: this.o.handshakeTimeoutMs,
      maxPayload: 64 * 1024,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on('open', () => {
      ws.send(JSON.stringify(this.o.hello));
      this.ping = setInterval(() => ws.send(RUNNER_LINK_PING), this.o.pingIntervalMs);
    });
    ws.on('message', (data, isBinary) => {
      const text = String(data);
      if (isBinary || text === '{"type":"pong"}') return;
      const claim = PoolClaimSchema.safeParse(jsonValue(text));
      if (!claim.success) {
        this.o.log.warn('pool coordinator sent a frame that is not a claim; ignored', { head: text.slice(0, 100) });
        return;
      }
      this.settle({ kind: 'claimed', claim: claim.data });
      // The close frame waits for the claim's first work (the session's first message to the CLI).
      setImmediate(() => ws.close(1000, 'claimed'));
    });
    ws.on('error', (err) => this.o.log.debug('pool link error', { error: err.message }));
    ws.on('close', (code, reason) => {
      if (this.ping !== undefined) clearInterval(this.ping);
      this.ping = undefined;
      // The coordinator refuses a link by accepting its upgrade and closing it at once: the close
      // code, not whether it opened, says whether to dial again.
      if (code === PoolCloseCode.tryAgainLater && !this.settled) {
        const delayMs = backoffDelay(this.attempt++, this.o.backoff);
        this.o.log.warn('pool link: identity not checked just now; dialling again', {
          reason: reason.toString(),
          delayMs,
        });
        this.redial = setTimeout(() => void this.start(), delayMs);
        return;
      }
      this.settle({ kind: 'ended', code, reason: reason.toString() });
    });
  }

  /** Ends the wait from this side (a signal): the link closes and `result` says so. */
  close(reason: string): void {
    this.settle({ kind: 'ended', code: 1000, reason });
    this.ws?.close(1000, reason.slice(0, 120));
  }

  private settle(result: PoolWait): void {
    if (this.ping !== undefined) clearInterval(this.ping);
    if (this.redial !== undefined) clearTimeout(this.redial);
    if (this.settled) return;
    this.settled = true;
    this.resolve(result);
  }
}
