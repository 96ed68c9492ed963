import { fromBase64Url, toBase64Url } from '@switchyard/protocol';

// Runner tokens: `syr1.<payload>.<mac>`, both parts base64url. The payload is the JSON
// `{"s":sessionId,"l":launchId,"e":expiresAtSeconds,"k":"b"|"c","r"?:runnerId}`; the mac is
// HMAC-SHA256 over `syr1.<payload>` with RUNNER_TOKEN_SECRET. A token is good for one session and
// one launch (so a runner the hub replaced or stopped cannot come back with it) until it expires.
// Two kinds: the *bootstrap* token (`b`) rides in the launch request (RunTask overrides, which
// ECS DescribeTasks and CloudTrail show) and is spent by the first welcome; the *credential*
// (`c`) names the runner it was issued to and only ever travels over the runner link (welcome,
// renewals). Nothing stores them.

const RUNNER_TOKEN_PREFIX = 'syr1';
/** Shorter secrets are refused: the HMAC key is the whole of a runner's authority. */
export const MIN_SECRET_LENGTH = 32;

type RunnerClaims = {
  sessionId: string;
  launchId: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
} & ({ kind: 'bootstrap' } | { kind: 'credential'; runnerId: string });

type VerifyResult =
  | { ok: true; claims: RunnerClaims }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function keyFor(secret: string): Promise<CryptoKey> {
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new Error(`RUNNER_TOKEN_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  let key = keys.get(secret);
  if (key === undefined) {
    key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
      'verify',
    ]);
    keys.set(secret, key);
  }
  return key;
}

export async function mintRunnerToken(secret: string, claims: RunnerClaims): Promise<string> {
  const payload = toBase64Url(
    encoder.encode(
      JSON.stringify({
        s: claims.sessionId,
        l: claims.launchId,
        e: Math.floor(claims.expiresAt / 1000),
        k: claims.kind === 'bootstrap' ? 'b' : 'c',
        ...(claims.kind === 'credential' && { r: claims.runnerId }),
      }),
    ),
  );
  const signed = `${RUNNER_TOKEN_PREFIX}.${payload}`;
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await keyFor(secret), encoder.encode(signed)));
  return `${signed}.${toBase64Url(mac)}`;
}

export async function verifyRunnerToken(secret: string, token: string, now: number): Promise<VerifyResult> {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== RUNNER_TOKEN_PREFIX || token.length > 2048)
    return { ok: false, reason: 'malformed' };
  const [, payload = '', macText = ''] = parts;
  const mac = fromBase64Url(macText);
  if (mac === null || mac.length !== 32) return { ok: false, reason: 'malformed' };
  // crypto.subtle.verify compares in constant time.
  const good = await crypto.subtle.verify(
    'HMAC',
    await keyFor(secret),
    mac,
    encoder.encode(`${RUNNER_TOKEN_PREFIX}.${payload}`),
  );
  if (!good) return { ok: false, reason: 'bad_signature' };
  const raw = fromBase64Url(payload);
  if (raw === null) return { ok: false, reason: 'malformed' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const p = parsed as { s?: unknown; l?: unknown; e?: unknown; k?: unknown; r?: unknown };
  if (typeof p.s !== 'string' || typeof p.l !== 'string' || typeof p.e !== 'number' || !Number.isInteger(p.e)) {
    return { ok: false, reason: 'malformed' };
  }
  if (p.k !== 'b' && !(p.k === 'c' && typeof p.r === 'string' && p.r !== '')) return { ok: false, reason: 'malformed' };
  const expiresAt = p.e * 1000;
  if (expiresAt <= now) return { ok: false, reason: 'expired' };
  const base = { sessionId: p.s, launchId: p.l, expiresAt };
  return {
    ok: true,
    claims: p.k === 'b' ? { ...base, kind: 'bootstrap' } : { ...base, kind: 'credential', runnerId: String(p.r) },
  };
}
