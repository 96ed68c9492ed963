// The runner compacts V8's heap at the points it knows it is between things: while its CLI is
// still starting, once a turn's transcript and files are stored and a second passed without input,
// and in the pool while it waits for a claim (docs/DESIGN.md "Runner memory" → "Between turns").
// V8's memory reducer does the same on its own, but only 4–8 s after the process goes quiet, so
// every turn and the start left ~3.5 MiB of free pages mapped until then: the old space's
// fragments and the young generation's second half.
//
// The collection is V8's "last resort" flavour, the one that returns free pages (a regular major
// collection frees objects but keeps their pages: measured, RSS unmoved). It takes ~15–50 ms of
// the runner's thread, so it only runs where nothing waits on that thread.

import type { Logger } from '../log.ts';

/** V8's `gc()` as a context made with `--expose-gc` has it (the options are V8's). */
type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: Collect | null | undefined;

/**
 * V8's collector. The runner's own context was made without `--expose-gc`, so the function is
 * taken from a new context made while the flag is on (the flag then goes off again, so no later
 * context gets it). null where this V8 gives none.
 */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  const { setFlagsFromString } = process.getBuiltinModule('node:v8');
  setFlagsFromString('--expose-gc');
  try {
    const gc: unknown = process.getBuiltinModule('node:vm').runInNewContext('gc');
    collect = typeof gc === 'function' ? (gc as Collect) : null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return collect;
}

const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/**
 * One collection that gives V8's free pages back, logged (debug) with what it took and returned.
 * `at`: which of the runner's quiet points asked for it.
 */
export function compactHeap(log: Logger, at: 'start' | 'turn' | 'pool'): void {
  const gc = collector();
  if (gc === null) return;
  const before = process.memoryUsage();
  const t0 = performance.now();
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const ms = Math.round((performance.now() - t0) * 10) / 10;
  const after = process.memoryUsage();
  // V8's heap as committed (heapTotal) and the process's RSS, before and after.
  log.debug('heap compacted', {
    at,
    ms,
    heapMiB: [mib(before.heapTotal), mib(after.heapTotal)],
    rssMiB: [mib(before.rss), mib(after.rss)],
  });
}
