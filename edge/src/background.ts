import type { Context } from 'hono';

/**
 * Lets `work` outlive the response (Workers cancel unawaited work when the response ends unless
 * it is passed to waitUntil). Failures are logged by name only. Tests that call `app.request`
 * have no ExecutionContext (Hono's getter throws); there the promise simply runs on.
 */
export function inBackground(c: Context, work: Promise<unknown>): void {
  const guarded = work.catch((err: unknown) => {
    console.error('background task failed:', err instanceof Error ? `${err.name}: ${err.message}` : typeof err);
  });
  try {
    c.executionCtx.waitUntil(guarded);
  } catch {
    // No ExecutionContext: nothing to extend.
  }
}
