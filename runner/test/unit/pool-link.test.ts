import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { WebSocketServer } from 'ws';
import { decodeProofHeader, RUNNER_PROOF_HEADER, type RunnerIdentityProof } from '@switchyard/protocol';
import { PoolCloseCode } from '@switchyard/protocol/pool';
import { createLogger } from '../../src/log.ts';
import { PoolLink } from '../../src/pool/pool-link.ts';

// The pool link against a bare WebSocket server playing the coordinator, which refuses a link as
// the coordinator does: it accepts the upgrade and closes at once with a code.

const servers: WebSocketServer[] = [];
const links: PoolLink[] = [];

afterEach(async () => {
  for (const l of links.splice(0)) l.close('test over');
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

/** Answers the n-th link (0-based) with `answer(n)`: a close code, or 'claim'. */
async function coordinator(answer: (n: number) => number | 'claim') {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(wss);
  await new Promise((r) => wss.once('listening', r));
  const proofs: Array<RunnerIdentityProof | undefined> = [];
  const hellos: unknown[] = [];
  wss.on('connection', (ws, req) => {
    const n = proofs.length;
    proofs.push(decodeProofHeader(req.headers[RUNNER_PROOF_HEADER] as string | undefined));
    const a = answer(n);
    if (a !== 'claim') {
      ws.close(a, `refused link ${n}`);
      return;
    }
    ws.once('message', (d) => {
      hellos.push(JSON.parse(String(d)));
      ws.send(JSON.stringify({ type: 'claim', sessionId: 's1', hubUrl: 'ws://127.0.0.1:1/c', runnerToken: 'rt' }));
    });
  });
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/pool`, proofs, hellos };
}

function link(url: string) {
  let signed = 0;
  const l = new PoolLink({
    url,
    token: 'pool-token',
    hello: {
      type: 'pool_hello',
      runnerId: 'pooled-1',
      backend: 'claude',
      model: null,
      cliVersion: '1.0.0',
      capabilities: { guard: 'loaded', sandbox: 'none' },
    },
    identity: {
      prove: async () => ({ amzDate: '20261207T100000Z', authorization: `AWS4-HMAC-SHA256 proof ${++signed}` }),
    },
    pingIntervalMs: 60_000,
    handshakeTimeoutMs: 5_000,
    backoff: { baseMs: 5, maxMs: 20 },
    log: createLogger({ level: 'error', write: () => {} }),
  });
  links.push(l);
  return l;
}

describe('the pool link', () => {
  test('a link the coordinator could not check just now (tryAgainLater) is dialled again with a new proof, then claimed', async () => {
    const c = await coordinator((n) => (n < 2 ? PoolCloseCode.tryAgainLater : 'claim'));
    const l = link(c.url);
    void l.start();
    const result = await l.result;
    expect(result).toMatchObject({ kind: 'claimed', claim: { sessionId: 's1' } });
    expect(c.proofs.map((p) => p?.authorization)).toEqual([
      'AWS4-HMAC-SHA256 proof 1',
      'AWS4-HMAC-SHA256 proof 2',
      'AWS4-HMAC-SHA256 proof 3',
    ]);
    expect(c.hellos).toEqual([expect.objectContaining({ type: 'pool_hello', runnerId: 'pooled-1' })]);
  });

  test.each([
    ['refused', PoolCloseCode.unauthorized],
    ['retired', PoolCloseCode.retired],
  ])('a link %s ends the wait at once: no second dial', async (_name, code) => {
    const c = await coordinator(() => code);
    const l = link(c.url);
    void l.start();
    expect(await l.result).toEqual({ kind: 'ended', code, reason: 'refused link 0' });
    expect(c.proofs).toHaveLength(1);
  });
});
