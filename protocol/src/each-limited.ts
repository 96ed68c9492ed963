// Bounded concurrency for code that runs in workerd as well as Node (the edge reads pack spans
// from R2, the runner hashes and uploads workspace files): one helper, so both bound it alike.

/** Runs `fn` over `items` with at most `limit` calls in flight; resolves when all are done, rejects with the first failure. */
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
