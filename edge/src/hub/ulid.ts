// Event ids: ULIDs that are strictly increasing within one session's log, whatever the clock
// does. A fresh ULID is used when its time part is ahead of the last id; otherwise the last id
// is incremented by one in its random part (the ULID spec's monotonic rule, but seeded from
// the log's last id, so it survives the hub being evicted and restarted).

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_LEN = 10;
const RANDOM_LEN = 16;

function encodeTime(ms: number): string {
  let out = '';
  let t = Math.max(0, Math.floor(ms));
  for (let i = 0; i < TIME_LEN; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function randomPart(): string {
  const bytes = new Uint8Array(RANDOM_LEN);
  crypto.getRandomValues(bytes);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 32];
  return out;
}

/** The id one greater than `id` (base 32, carrying); throws only at the end of ULID space. */
function incrementUlid(id: string): string {
  const chars = id.split('');
  for (let i = chars.length - 1; i >= 0; i--) {
    const v = ALPHABET.indexOf(chars[i] ?? '');
    if (v < 31) {
      chars[i] = ALPHABET[v + 1] ?? '0';
      return chars.join('');
    }
    chars[i] = '0';
  }
  throw new Error('ULID space exhausted');
}

/** The time part of a ULID, in milliseconds (the inverse of its first ten characters' encoding). */
export function ulidTime(id: string): number {
  let t = 0;
  for (const c of id.slice(0, TIME_LEN)) t = t * 32 + ALPHABET.indexOf(c);
  return t;
}

/** A ULID for `now` that sorts strictly after `last` (when given). */
export function nextUlid(now: number, last: string | null): string {
  const fresh = encodeTime(now) + randomPart();
  if (last === null || fresh > last) return fresh;
  return incrementUlid(last);
}
