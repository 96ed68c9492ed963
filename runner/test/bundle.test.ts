import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { buildBundle } from '../scripts/build-bundle.ts';
import { scripted, serveRunner, stopRunner, tempDir, textOf, waitReady, waitTurnDone } from './contract/fixture.ts';
import { processReport, reportingEnv } from './contract/process-report.ts';
import { runnerSuite } from './contract/suite.ts';
import { TestHub } from './contract/test-hub.ts';

// The bundle the image runs (runner/scripts/build-bundle.ts): runner/dist, built here for
// real and run as the image runs it, against the real CLIs and the offline model. What can break
// in a bundle is where things are found: the guard module, the CLIs under
// node_modules and the strip cache are all located from the source file's own location.

describe('runner bundle', () => {
  const suite = runnerSuite(() => TestHub.start());
  let bundle: string;

  beforeAll(async () => {
    // The strip cache filled first, as the image fills it at build time: a module edited since it
    // was cached is stripped once, by design, and would say nothing about what serve loads.
    const fill = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'bin', 'fill-strip-cache.js')], {
      encoding: 'utf8',
    });
    expect(fill.status, fill.stderr).toBe(0);
    bundle = await buildBundle();
  }, 60_000);

  test('probe from the bundle: both CLIs found, the guard loaded from the runner tree, bubblewrap', () => {
    const r = spawnSync(process.execPath, [bundle, 'probe'], {
      env: { PATH: process.env.PATH ?? '', SWITCHYARD_MODEL_URL: suite.model.url },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; backends: Array<Record<string, unknown>> };
    expect(out.ok).toBe(true);
    expect(out.backends.map((b) => b.backend).sort()).toEqual(['claude', 'pi']);
    for (const b of out.backends) {
      expect(b).toMatchObject({ installed: true, guard: 'loaded', sandbox: 'bubblewrap', usable: true, problems: [] });
    }
  });

  for (const backend of ['claude', 'pi'] as const) {
    test(`serve from the bundle with ${backend}: the guard passed its self-test, a tool call runs in the sandbox, one outside the workspace is refused`, async () => {
      const session = await suite.hub.newSession();
      const { runner, workspace } = serveRunner(session, backend, suite.model.url, {}, { entry: bundle });
      try {
        await waitReady(session);
        // `loaded` is only said after the guard blocked the self-test's canary (runner/src/sandbox/canary.ts).
        expect(session.hellos()[0]).toMatchObject({
          backend,
          capabilities: { guard: 'loaded', sandbox: 'bubblewrap' },
        });
        const { messageId } = await session.sendMessage(
          scripted('bundle-tool', { tool: 'shell', command: 'echo bundle-ran > proof.txt; echo done' }),
        );
        expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
        expect(readFileSync(join(workspace, 'proof.txt'), 'utf8').trim()).toBe('bundle-ran');
        expect(textOf(session, messageId).length).toBeGreaterThan(0);
        // The attack, through the real CLI and the guard the bundle's runner answers it with: a read
        // outside the workspace.
        const denied = await session.sendMessage(scripted('bundle-guard', { tool: 'read', path: '/etc/hostname' }));
        expect((await waitTurnDone(session, denied.messageId)).stopReason).toBe('end_turn');
        expect(textOf(session, denied.messageId)).toMatch(
          /^Tool result \(error\): .*switchyard guard: .*outside the session workspace/s,
        );
      } finally {
        await stopRunner(runner);
      }
    });
  }

  // What a serving runner keeps is paid per session (docs/DESIGN.md "Runner memory"). Node's
  // bundled undici (a fetch, or an ES import of node:http anywhere serve evaluates) and its
  // TypeScript stripper come in by accident; after a turn, which also asked for the workspace
  // manifest, neither may be loaded, from the bin (local host, tests) or the bundle (the image).
  for (const from of ['bin', 'bundle'] as const) {
    test(`from the ${from}: after a turn, neither undici nor the TypeScript stripper`, async () => {
      const session = await suite.hub.newSession();
      const report = join(tempDir('sy-report-'), 'report.json');
      const { runner } = serveRunner(session, 'claude', suite.model.url, reportingEnv(report), {
        ...(from === 'bundle' && { entry: bundle }),
      });
      try {
        await waitReady(session);
        const { messageId } = await session.sendMessage('hello');
        expect((await waitTurnDone(session, messageId)).stopReason).toBe('end_turn');
        const loaded = await processReport(runner.pid, report);
        expect(loaded).toMatchObject({ undici: false, stripper: false });
        expect(loaded.heapUsed).toBeGreaterThan(0);
      } finally {
        await stopRunner(runner);
      }
    });
  }

  // V8 takes a builtin's code cache only under the flags it was made with, and the bin changes them
  // (runner/bin/switchyard-runner.js): every builtin the image's fresh session runner needs before
  // its CLI's spawn is loaded before that, or it is compiled from source on the way to the spawn.
  // (From the bin, Node's CommonJS lexer comes in too, for a dependency the bundle has inlined.)
  for (const backend of ['claude', 'pi'] as const) {
    test(`from the bundle, ${backend}: no builtin is first loaded between V8's flags and the CLI's spawn`, async () => {
      const session = await suite.hub.newSession();
      const report = join(tempDir('sy-report-'), 'report.json');
      const { runner } = serveRunner(
        session,
        backend,
        suite.model.url,
        { ...reportingEnv(report), SWITCHYARD_FRESH_SESSION: '1' },
        { entry: bundle },
      );
      try {
        await waitReady(session);
        const { spawns } = await processReport(runner.pid, report);
        const cli = spawns.find((s) => s.file.endsWith('/bwrap'));
        expect(cli, JSON.stringify(spawns)).toBeDefined();
        expect(cli?.builtinsAfterFlags).toEqual([]);
      } finally {
        await stopRunner(runner);
      }
    });
  }
});
