// Which broker keys the broker accepts, and how long it trusts what it read (docs/DESIGN.md "A
// leaked edge key running its own command" → "Rotating the broker key"). A rotation makes a new
// value current; the edge switches to it some minutes later, so the value before it is accepted
// too, but only for PREVIOUS_KEY_GRACE_MS after the new one was made: a leaked key stops working
// an hour after one rotation (at once after two), with no change to the broker's configuration.
// Read values are trusted for KEY_CACHE_MS, so a rotation reaches every warm broker within that.

export interface SecretVersion {
  value: string;
  /** When this version was made (epoch ms). */
  createdAt: number;
}

export interface KeyVersions {
  current: SecretVersion;
  previous: SecretVersion | null;
}

export const KEY_CACHE_MS = 5 * 60_000;
export const PREVIOUS_KEY_GRACE_MS = 60 * 60_000;

/** Pure: the keys a signature may be made with at `now`, the current one first. */
export function acceptedKeys(v: KeyVersions, now: number): string[] {
  const previous = now - v.current.createdAt < PREVIOUS_KEY_GRACE_MS ? v.previous : null;
  return previous === null ? [v.current.value] : [v.current.value, previous.value];
}

export interface KeyringOptions {
  read: () => Promise<KeyVersions>;
  now?: () => number;
  /** Told when a refresh failed and the keys read before are kept. */
  log?: (line: string) => void;
}

/**
 * The accepted keys, read at first use and again once KEY_CACHE_MS old (one read at a time). A
 * first read that fails fails the request; a refresh that fails keeps the keys read before, so a
 * Secrets Manager outage does not stop launches, and the next request tries again.
 */
export function brokerKeyring(o: KeyringOptions): () => Promise<string[]> {
  const now = o.now ?? Date.now;
  let held: { versions: KeyVersions; readAt: number } | undefined;
  let reading: Promise<KeyVersions> | undefined;
  return async () => {
    if (held !== undefined && now() - held.readAt < KEY_CACHE_MS) return acceptedKeys(held.versions, now());
    reading ??= o.read().finally(() => {
      reading = undefined;
    });
    try {
      const versions = await reading;
      held = { versions, readAt: now() };
    } catch (err) {
      if (held === undefined) throw err;
      o.log?.(`the broker key could not be read again, the keys read before stay: ${errorText(err)}`);
    }
    return acceptedKeys(held.versions, now());
  };
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
