import { describe, expect, test } from 'vitest';
import { scripted, serveRunner, stopRunner, turnDones, waitReady, waitTurnDone } from './contract/fixture.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// A model call the provider refuses: the person chatting reads a plain summary with no host in it
// (protocol's provider-errors.ts), and the runner's log tells the operator where the call went and
// what the provider answered (credential-proxy.ts `onUpstreamProblem`). A real runner and the real
// pi CLI against the offline model.

describe("a provider's refusal", () => {
  const suite = runnerSuite(() => TestHub.start());

  test('reaches the chat as a plain summary and the runner log with the upstream, the status and the answer', async () => {
    const session = await suite.hub.newSession();
    const served = serveRunner(session, 'pi', suite.model.url);
    suite.track(served.runner);
    const { runner } = served;
    await waitReady(session);
    const { messageId } = await session.sendMessage(scripted('refused', { error: 401 }));
    await waitTurnDone(session, messageId);

    const [done] = turnDones(session, messageId);
    expect(done?.error?.code).toBe('provider_auth');
    const upstream = new URL(suite.model.url).host;
    const shown = JSON.stringify(session.events().map((e) => e.event));
    expect(shown).not.toContain(upstream);
    expect(shown).not.toContain('SWITCHYARD_');

    const logged = runner.logs.filter((l) => l.msg === 'model call failed upstream');
    expect(logged[0]).toMatchObject({ level: 'warn', upstream, path: '/v1/messages', status: 401 });
    expect(String(logged[0]?.body)).toContain('authentication_error');
    await stopRunner(runner);
  });
});
