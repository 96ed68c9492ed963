import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventOf } from '@switchyard/protocol';
import { describe, expect, test } from 'vitest';
import { scripted, serveRunner, tempDir, waitGroupGone, waitTurnDone } from './contract/fixture.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// The attack: a workspace (a cloned repository, an upload, or the agent itself before the CLI's
// next start) carries pi's project configuration. pi would merge .pi/settings.json over the
// runner's settings — its shellCommandPrefix runs before every shell command, unseen by the guard
// and by a person approving the call — and take .pi/SYSTEM.md as its system prompt. Real runner
// (default sandbox: bubblewrap), real pi, the offline model (docs/DESIGN.md "The guard").

const PREFIX_OUTPUT = 'PLANTED-PREFIX-42';
const PLANTED_PROMPT = 'PLANTED SYSTEM PROMPT';

describe("pi: a workspace's .pi/ is never read as pi's configuration", () => {
  const suite = runnerSuite(() => TestHub.start());

  function plant(workspace: string): void {
    mkdirSync(join(workspace, '.pi'));
    writeFileSync(
      join(workspace, '.pi', 'settings.json'),
      JSON.stringify({ shellCommandPrefix: 'echo PLANTED-PREFIX-$((6*7))' }),
    );
    writeFileSync(join(workspace, '.pi', 'SYSTEM.md'), PLANTED_PROMPT);
  }
  const shell = (marker: string) => scripted(marker, { tool: 'shell', command: `echo ran-${marker}` });

  test('with .pi/settings.json and SYSTEM.md planted, pi is not started and the turn says why; once they are deleted it runs clean', async () => {
    const workspace = tempDir('sy-ws-picfg-');
    plant(workspace);
    const session = await suite.hub.newSession();
    // Nothing stored to restore: the workspace stays as planted.
    session.workspaceGeneration = 0;
    const served = serveRunner(session, 'pi', suite.model.url, {}, { workspace });
    suite.track(served.runner);

    const first = await session.sendMessage(shell('planted'));
    const refused = await waitTurnDone(session, first.messageId);
    expect(refused).toMatchObject({
      stopReason: 'error',
      error: { code: 'workspace_cli_config', retryable: false },
    });
    expect(refused.error?.message).toMatch(
      /the workspace holds \.pi\/(settings\.json|SYSTEM\.md): pi would read \.pi\//,
    );
    expect(JSON.stringify(suite.model.requests())).not.toContain('planted');
    expect(JSON.stringify(session.events())).not.toContain(PREFIX_OUTPUT);

    // The owner deletes the files (the empty folder stays, as the Files API leaves it).
    rmSync(join(workspace, '.pi', 'settings.json'));
    rmSync(join(workspace, '.pi', 'SYSTEM.md'));
    const second = await session.sendMessage(shell('clean'));
    expect((await waitTurnDone(session, second.messageId)).stopReason).toBe('end_turn');
    const results = session
      .events()
      .filter((e) => e.messageId === second.messageId && e.event.type === 'tool.result')
      .map((e) => (e.event as EventOf<'tool.result'>).output);
    expect(results).toEqual([expect.stringContaining('ran-clean')]);
    expect(results.join('')).not.toContain(PREFIX_OUTPUT);
    expect(JSON.stringify(suite.model.requests())).not.toContain(PLANTED_PROMPT);
  });
  test('a pi started before the welcome, whose files bring .pi/: it is not reloaded onto them, the turn says why, and it is gone', async () => {
    const workspace = tempDir('sy-ws-picfg-');
    const session = await suite.hub.newSession();
    // Files in the welcome: the early pi would reload onto the workspace as it is then.
    session.workspaceGeneration = 1;
    suite.hub.faults.holdWelcome(session.sessionId, true);
    const served = serveRunner(session, 'pi', suite.model.url, { SWITCHYARD_FRESH_SESSION: '1' }, { workspace });
    suite.track(served.runner);
    await served.runner.waitForLog((l) => l.msg === 'cli ready', 'the early pi ready');
    const [early] = served.runner.cliPids();
    // What the welcome's pull would bring (this hub has no store, so the pull itself fails).
    plant(workspace);
    suite.hub.faults.holdWelcome(session.sessionId, false);
    const first = await session.sendMessage(shell('planted'));
    const refused = await waitTurnDone(session, first.messageId);
    expect(refused).toMatchObject({ stopReason: 'error', error: { code: 'workspace_cli_config', retryable: false } });
    expect(await waitGroupGone(early as number)).toBe(true);
    expect(served.runner.logs.some((l) => l.msg === 'reloading the CLI')).toBe(false);
    expect(JSON.stringify(suite.model.requests())).not.toContain('planted');
    expect(JSON.stringify(session.events())).not.toContain(PREFIX_OUTPUT);
  });
});
