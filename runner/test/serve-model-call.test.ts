import { once } from 'node:events';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AddressInfo, connect, createServer as createTcpServer } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ApprovalMode } from '@switchyard/protocol';
import { type OfflineModel, startOfflineModel } from '@switchyard/offline-model';
import { startCredentialProxy } from '../src/sandbox/credential-proxy.ts';
import { scripted, serveRunner, stopRunner, waitTurnDone } from './contract/fixture.ts';
import { startInProcessRunner } from './contract/in-process-runner.ts';
import { type ModelForwarder, startModelForwarder } from './contract/model-forwarder.ts';
import { TestHub } from './contract/test-hub.ts';

// The runner tells the model proxy that the CLI's next call is coming (`modelCallComing`) — after
// a message, the last approval's answer, the last tool's result — so the proxy can open the call's
// upstream connection while the CLI builds it (credential-proxy.ts `prepareCall`; docs/DESIGN.md
// "Runner behaviour (serve)"). The runner runs in this process with the real pi and the offline
// model, each notice recording how many Messages calls the model had by then: a message's and an
// answer's notice come in the same tick as the write to the CLI, a result's as soon as pi printed
// it, before pi sends the call.
// And the other end of the way: the proxy keeps the CLI's own connection across a pause
// (credential-proxy.ts `CLI_KEEP_ALIVE_MS`).

let hub: TestHub;
let model: OfflineModel;
let upstream: ModelForwarder;
const dirs: string[] = [];
beforeAll(async () => {
  hub = await TestHub.start();
  model = await startOfflineModel();
  // Closing each connection after its answer, so every call after the first needs a new one.
  upstream = await startModelForwarder(model.url, { closeConnections: true });
});
afterAll(async () => {
  await hub?.close();
  await model?.close();
  upstream?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** pi in a runner in this process; each notice records how many Messages calls the model had by then. */
async function startRunner(approvals: ApprovalMode) {
  const callsBefore: number[] = [];
  const modelCallComing = () => callsBefore.push(model.requests().filter((r) => r.path === '/v1/messages').length);
  const { session, stop } = await startInProcessRunner(hub, {
    backend: 'pi',
    modelUrl: model.url,
    approvals,
    options: { modelCallComing },
  });
  return { session, callsBefore, stop };
}

describe('the model call coming', () => {
  test('is announced after each message written to the CLI, before its call', async () => {
    const { session, callsBefore, stop } = await startRunner('auto');
    for (const text of ['first', 'second']) {
      const { messageId, reply } = await session.sendMessage(text);
      expect(reply, JSON.stringify(reply)).toMatchObject({ accepted: true });
      expect(await waitTurnDone(session, messageId)).not.toHaveProperty('error');
    }
    expect(callsBefore).toEqual([0, 1]);
    await stop();
  });

  test("is announced after the answer to an approval and after the tool's result, before their call", async () => {
    const { session, callsBefore, stop } = await startRunner('ask');
    model.reset();
    model.enqueue({ tool: 'shell', command: 'true' }, { text: 'ran it' });
    const { messageId, reply } = await session.sendMessage('run true');
    expect(reply, JSON.stringify(reply)).toMatchObject({ accepted: true });
    const asked = await session.waitFor(
      () => session.events().find((e) => e.event.type === 'approval.request')?.event,
      'the approval request',
    );
    if (asked.type !== 'approval.request') throw new Error('not an approval request');
    expect(await session.decide(asked.approvalId, 'allow')).toMatchObject({ accepted: true });
    expect(await waitTurnDone(session, messageId)).not.toHaveProperty('error');
    expect(session.events().map((e) => e.event.type)).toContain('tool.result');
    // The message's call, then the answer's and the result's: both before the second call.
    expect(callsBefore).toEqual([0, 1, 1]);
    await stop();
  });
});

describe('in a serve process', () => {
  test("the proxy opens the next call's connection when an approval is answered, and the call takes it", async () => {
    let connections = 0;
    const count = () => {
      connections += 1;
    };
    upstream.server.on('connection', count);
    const session = await hub.newSession();
    session.approvals = 'ask';
    const { runner, workspace, stateDir } = serveRunner(session, 'pi', upstream.url);
    dirs.push(workspace, stateDir);
    try {
      // The tool waits for the test, so a connection opened meanwhile can only be the proxy's own.
      const waitForRelease = 'while [ ! -e release ]; do sleep 0.05; done; echo released';
      const { messageId } = await session.sendMessage(scripted('wiring', { tool: 'shell', command: waitForRelease }));
      const asked = await session.waitFor(
        () => session.events().find((e) => e.event.type === 'approval.request')?.event,
        'the approval request',
      );
      if (asked.type !== 'approval.request') throw new Error('not an approval request');
      // The tool call's answer came on a connection the upstream closed after it.
      expect(connections).toBe(1);
      const opened = once(upstream.server, 'connection', { signal: AbortSignal.timeout(15_000) }).then(
        () => true,
        () => false,
      );
      expect(await session.decide(asked.approvalId, 'allow')).toMatchObject({ accepted: true });
      expect(await opened, 'a connection to the model opened while the tool waited').toBe(true);
      writeFileSync(join(workspace, 'release'), '');
      expect(await waitTurnDone(session, messageId)).not.toHaveProperty('error');
      // The tool result's call went over the connection opened at the answer: no third one.
      expect(session.events().find((e) => e.event.type === 'tool.result')?.event).toMatchObject({ isError: false });
      expect(connections).toBe(2);
    } finally {
      upstream.server.off('connection', count);
      await stopRunner(runner);
    }
  });
});

describe("the CLI's connection to the credential proxy", () => {
  test("outlasts a pause longer than pi keeps one under Node's default keep-alive", async () => {
    const proxy = await startCredentialProxy({ upstream: model.url });
    // Between pi and the proxy: a relay that counts pi's connections and passes everything on,
    // each side's close included.
    let connections = 0;
    const relay = createTcpServer((fromCli) => {
      connections += 1;
      const toProxy = connect(Number(new URL(proxy.url).port), '127.0.0.1');
      fromCli.pipe(toProxy).pipe(fromCli);
      fromCli.on('error', () => toProxy.destroy());
      toProxy.on('error', () => fromCli.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const { session, stop } = await startInProcessRunner(hub, {
      backend: 'pi',
      modelUrl: relayUrl,
      apiKey: proxy.sessionKey,
    });
    try {
      const first = await session.sendMessage('before the pause');
      expect(await waitTurnDone(session, first.messageId)).not.toHaveProperty('error');
      expect(connections).toBe(1);
      // The pause is what is tested: told Node's default (5 s), pi closes an idle connection
      // after 3 s, and its next call opens a new one.
      await pause(4_000);
      const second = await session.sendMessage('after the pause');
      expect(await waitTurnDone(session, second.messageId)).not.toHaveProperty('error');
      expect(connections, 'connections pi opened to the proxy').toBe(1);
    } finally {
      await stop();
      relay.close();
      await proxy.close();
    }
  });
});
