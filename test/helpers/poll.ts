// The one poll helper of the edge (workerd), runner and cross-package tests: for state no event
// announces, a test polls a condition against a deadline instead of sleeping. Web APIs only, so
// workerd can run it too.

/** A condition: `undefined` or `false` means "not yet"; anything else is the value waited for. */
export type Probe<T> = () => T | undefined | false | Promise<T | undefined | false>;

/** The first wait is short (in-process state settles within milliseconds), then up to this. */
const MAX_INTERVAL_MS = 100;

/** Polls `probe` until it yields a value, failing after `timeoutMs` with `what` in the message. */
export async function until<T>(what: string, probe: Probe<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let interval = 5;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, MAX_INTERVAL_MS);
  }
}
