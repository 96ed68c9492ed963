import { constantTimeEqual } from './constant-time.ts';
import { fromBase64, toBase64 } from '@switchyard/protocol';
import { randomBytes } from './random.ts';

/**
 * workerd refuses PBKDF2 above 100,000 iterations (NotSupportedError; pinned by
 * test/password.test.ts), so this is the strongest count a Worker can verify.
 */
export const PBKDF2_ITERATIONS = 100_000;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
const SCHEME = 'pbkdf2-sha256';

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(password), 'PBKDF2', false, ['deriveBits']);
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    HASH_BYTES * 8,
  );
  return new Uint8Array(bits);
}

/** `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>`: self-describing so the count can rise later. */
export async function hashPassword(password: string, iterations = PBKDF2_ITERATIONS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, iterations);
  return `${SCHEME}$${iterations}$${toBase64(salt)}$${toBase64(hash)}`;
}

interface Parsed {
  iterations: number;
  salt: Uint8Array;
  hash: Uint8Array;
}

function parse(stored: string): Parsed | null {
  const parts = stored.split('$');
  if (parts.length !== 4 || parts[0] !== SCHEME) return null;
  const iterations = Number(parts[1]);
  const salt = fromBase64(parts[2] ?? '');
  const hash = fromBase64(parts[3] ?? '');
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > PBKDF2_ITERATIONS) return null;
  if (salt === null || hash === null || hash.length !== HASH_BYTES) return null;
  return { iterations, salt, hash };
}

// Verified against when the username does not exist, so a miss costs the same PBKDF2 work as a
// wrong password and response time does not reveal which usernames exist. Matches no password
// in practice: the hash is random bytes.
export const DUMMY_PASSWORD_HASH = `${SCHEME}$${PBKDF2_ITERATIONS}$c3dpdGNoeWFyZC1kdW1teQ==$8qI3m1QnJfZ0xk4vY2b0U3c1Zq9mX3hVd0RlYkFxUnM=`;

/**
 * `compare` is a parameter only so a test can observe that every verification, right or wrong,
 * is decided by a constant-time comparison (module mocks cannot reach code the Worker entry has
 * already loaded). Callers leave it alone.
 */
export async function verifyPassword(
  password: string,
  stored: string,
  compare: (a: Uint8Array, b: Uint8Array) => boolean = constantTimeEqual,
): Promise<boolean> {
  const parsed = parse(stored) ?? parse(DUMMY_PASSWORD_HASH);
  if (parsed === null) return false;
  const candidate = await derive(password, parsed.salt, parsed.iterations);
  return compare(candidate, parsed.hash) && parse(stored) !== null;
}

/** True when the stored hash uses fewer iterations than today's count and should be replaced. */
export function needsRehash(stored: string): boolean {
  const parsed = parse(stored);
  return parsed === null || parsed.iterations < PBKDF2_ITERATIONS;
}
