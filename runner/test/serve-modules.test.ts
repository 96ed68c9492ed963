import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { buildBundle } from '../scripts/build-bundle.ts';
import { serveRunner, stopRunner, tempDir, waitReady, waitTurnDone } from './contract/fixture.ts';
import { processReport, reportingEnv } from './contract/process-report.ts';
import { assertNoOrphans } from './contract/runner-process.ts';
import { TestHub } from './contract/test-hub.ts';

// What a serving runner keeps in memory is paid once per session (docs/DESIGN.md "Runner memory").
// Two of Node's own modules cost the most for nothing and come in by accident: the TypeScript
// stripper (a module served past the strip cache) and Node's bundled undici (~5-10 MiB: a fetch,
// or an ES import of node:http anywhere serve evaluates, probe's offline model included). After a
// turn, which also fetched the workspace manifest, the runner must have loaded neither, run from
// the bin (the local host, tests) or from the bundle (the image). The strip cache is filled first,
// as the image fills it at build time: a module edited since it was cached is stripped once, by
// design, and would say nothing about what serve loads.

describe('modules a serving runner loads', () => {
  let model: OfflineModel;
  let hub: TestHub;
  let bundle: string;

  beforeAll(async () => {
    const fill = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'bin', 'fill-strip-cache.js')], {
      encoding: 'utf8',
    });
    expect(fill.status, fill.stderr).toBe(0);
    bundle = await buildBundle();
    model = await startOfflineModel();
    hub = await TestHub.start();
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    await model?.close();
  });
  afterEach(async () => {
    await assertNoOrphans();
  });

  for (const from of ['bin', 'bundle'] as const) {
    test(`from the ${from}: after a turn, neither undici nor the TypeScript stripper`, async () => {
      const session = await hub.newSession();
      const report = join(tempDir('sy-report-'), 'report.json');
      const { runner } = serveRunner(session, 'claude', model.url, reportingEnv(report), {
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
});
