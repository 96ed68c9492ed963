import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { serveRunner, stopRunner, textOf, turnDones, waitReady, waitTurnDone } from './contract/fixture.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// The runner's hub link sends what the hub does not hold right behind its hello, without waiting
// a round trip for the welcome (docs/DESIGN.md "Runner link"). A real runner and the real pi CLI
// against the offline model; the test hub holds its welcome, so "before the welcome" is an
// ordering the test controls.

describe('the hub link', () => {
  const suite = runnerSuite(() => TestHub.start());

  test('frames the hub does not hold go out behind the hello, before the welcome, and are not sent again after it', async () => {
    const session = await suite.hub.newSession();
    const served = serveRunner(session, 'pi', suite.model.url);
    suite.track(served.runner);
    const { runner } = served;
    await waitReady(session);
    const faults = suite.hub.faults;
    // A whole turn the hub receives but never acks, then the hub dies and forgets it.
    faults.pauseAcks(session.sessionId, true);
    const marker = `behind-${randomUUID().slice(0, 8)}`;
    const { messageId } = await session.sendMessage(marker);
    await waitTurnDone(session, messageId);
    faults.holdWelcome(session.sessionId, true);
    faults.cutLink(session.sessionId, { dropUnacked: true });
    expect(turnDones(session, messageId)).toEqual([]);

    // The runner dials again; the hub holds the welcome, and the turn arrives all the same.
    await waitTurnDone(session, messageId);
    expect(session.hellos()).toHaveLength(2);
    expect(runner.logs.filter((l) => l.msg === 'hub link up')).toHaveLength(1);

    faults.holdWelcome(session.sessionId, false);
    faults.pauseAcks(session.sessionId, false);
    await runner.waitForLog((l) => l.msg === 'hub link up' && l.first === false, 'the second welcome');
    // Each dial's upgrade is logged with how long the edge took to answer it.
    expect(runner.logs.filter((l) => l.msg === 'hub link open').map((l) => typeof l.upgradeMs)).toEqual([
      'number',
      'number',
    ]);
    faults.ackNow(session.sessionId);
    const next = await session.sendMessage(`after-${marker}`);
    await waitTurnDone(session, next.messageId);
    expect(textOf(session, messageId)).toContain(`Offline model reply to: ${marker}`);
    expect(turnDones(session, messageId)).toHaveLength(1);
    // Every seq exactly once: nothing sent behind the hello was sent again after the welcome.
    const seqs = [...session.events().map((e) => e.seq), ...session.transcripts().map((t) => t.seq)].sort(
      (x, y) => x - y,
    );
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(session.violations()).toEqual([]);
    await stopRunner(runner);
  });
});
