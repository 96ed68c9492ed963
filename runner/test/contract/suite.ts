import { afterAll, afterEach, beforeAll } from 'vitest';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { assertNoOrphans, type RunnerProcess } from './runner-process.ts';

/**
 * What a suite of real runner processes shares: a hub and the offline model, started before its
 * tests and closed after them, and the runners its tests start (`track`). After each test every
 * tracked runner still running is killed, and no process any runner or CLI started may survive it.
 */
export function runnerSuite<H extends { close(): Promise<void> }>(makeHub: () => Promise<H>) {
  let hub: H | undefined;
  let model: OfflineModel | undefined;
  const runners: RunnerProcess[] = [];
  beforeAll(async () => {
    hub = await makeHub();
    model = await startOfflineModel();
  });
  afterAll(async () => {
    await hub?.close();
    await model?.close();
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) {
      r.kill('SIGKILL');
      await r.exited;
    }
    await assertNoOrphans();
  });
  const started = <T>(x: T | undefined): T => {
    if (x === undefined) throw new Error('runnerSuite: used before its beforeAll ran');
    return x;
  };
  return {
    get hub(): H {
      return started(hub);
    },
    get model(): OfflineModel {
      return started(model);
    },
    track(runner: RunnerProcess): void {
      runners.push(runner);
    },
  };
}
