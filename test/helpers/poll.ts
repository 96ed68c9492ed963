/** Polls `f` until it returns a value, failing after `deadlineMs` (for state no event announces). */
export async function waitFor<T>(
  what: string,
  f: () => T | undefined | Promise<T | undefined>,
  deadlineMs: number,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
