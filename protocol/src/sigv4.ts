// AWS Signature Version 4 over HTTP requests, with WebCrypto only (Node and workerd alike). The
// local runner host (runner/src/host) and the launch broker verify requests with it, the same
// check ECS makes; the broker signs what it passes on to ECS and Secrets Manager with it, the edge
// its calls to the local host's probe route, a runner its proof of task identity. The edge's own
// ECS calls are signed by the AWS SDK.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html

import { toHex } from './encoding.ts';

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Credentials as AWS hands them out: temporary ones (a role's) carry a session token. */
export interface AwsCredentials extends SigV4Credentials {
  sessionToken?: string;
}

interface SigV4Request {
  method: string;
  /** The request target as sent: path and query, not decoded. */
  target: string;
  /** Lower-cased names; repeated headers joined with ', ' (what Node's `req.headers` gives). */
  headers: Record<string, string>;
  body: Uint8Array | string;
}

type SigV4Failure = {
  ok: false;
  /** The AWS error type a real endpoint answers with. */
  type:
    | 'MissingAuthenticationTokenException'
    | 'IncompleteSignatureException'
    | 'InvalidSignatureException'
    | 'UnrecognizedClientException';
  message: string;
};
type SigV4Result = { ok: true; accessKeyId: string; region: string; service: string } | SigV4Failure;

const ALGORITHM = 'AWS4-HMAC-SHA256';
const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/\s,]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const AMZ_DATE = /^(\d{8})T\d{6}Z$/;
/** How far X-Amz-Date may be from the verifier's clock, as AWS allows. */
const SIGV4_MAX_SKEW_MS = 5 * 60_000;

const enc = new TextEncoder();
// A copy backed by a plain ArrayBuffer, which is what WebCrypto's types accept (a Node Buffer may not be).
const bytes = (x: Uint8Array | string): Uint8Array<ArrayBuffer> =>
  new Uint8Array(typeof x === 'string' ? enc.encode(x) : x);
const hex = (b: ArrayBuffer) => toHex(new Uint8Array(b));

async function sha256Hex(data: Uint8Array | string): Promise<string> {
  return hex(await crypto.subtle.digest('SHA-256', bytes(data)));
}

async function hmac(key: Uint8Array<ArrayBuffer> | ArrayBuffer, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return crypto.subtle.sign('HMAC', k, bytes(data));
}

/** RFC 3986 unreserved characters stay; everything else is %XX (upper-case), as SigV4 wants. */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function canonicalTarget(target: string): { path: string; query: string } {
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  const rawQuery = q === -1 ? '' : target.slice(q + 1);
  // Non-S3 services sign the path with each segment escaped (the SDK's `uriEscapePath`).
  const path =
    rawPath === ''
      ? '/'
      : rawPath
          .split('/')
          .map((seg) => uriEncode(safeDecode(seg)))
          .join('/');
  const pairs =
    rawQuery === ''
      ? []
      : rawQuery.split('&').map((p) => {
          const i = p.indexOf('=');
          const k = i === -1 ? p : p.slice(0, i);
          const v = i === -1 ? '' : p.slice(i + 1);
          return [uriEncode(safeDecode(k.replace(/\+/g, ' '))), uriEncode(safeDecode(v.replace(/\+/g, ' ')))] as const;
        });
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return { path, query: pairs.map(([k, v]) => `${k}=${v}`).join('&') };
}

async function signature(
  r: SigV4Request,
  signed: string[],
  amzDate: string,
  scope: { date: string; region: string; service: string },
  secret: string,
): Promise<string> {
  const { path, query } = canonicalTarget(r.target);
  const canonicalHeaders = signed.map((h) => `${h}:${(r.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  // The body's own hash, never the x-amz-content-sha256 header's claim of it: a signature made for
  // one body must not carry another.
  const payload = await sha256Hex(r.body);
  const canonical = [r.method.toUpperCase(), path, query, canonicalHeaders, signed.join(';'), payload].join('\n');
  const credentialScope = `${scope.date}/${scope.region}/${scope.service}/aws4_request`;
  const toSign = [ALGORITHM, amzDate, credentialScope, await sha256Hex(canonical)].join('\n');
  let key: ArrayBuffer = await hmac(bytes(`AWS4${secret}`), scope.date);
  for (const part of [scope.region, scope.service, 'aws4_request']) key = await hmac(key, part);
  return hex(await hmac(key, toSign));
}

/** Constant-time comparison of two hex signatures of equal length. */
function sameHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Verifies a request's `Authorization: AWS4-HMAC-SHA256 ...` header against `credentials`:
 * the access key, the scope's service, `host` and `x-amz-date` among the signed headers, the
 * date within SIGV4_MAX_SKEW_MS of `now`, and the signature itself over method, path, query,
 * signed headers and the body's SHA-256.
 */
export async function verifySigV4(
  r: SigV4Request,
  credentials: SigV4Credentials,
  o: { service: string; now?: number },
): Promise<SigV4Result> {
  const auth = r.headers.authorization;
  if (auth === undefined || auth === '')
    return { ok: false, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const m = AUTH.exec(auth);
  if (!m)
    return {
      ok: false,
      type: 'IncompleteSignatureException',
      message: 'Authorization header is not a well-formed AWS4-HMAC-SHA256 signature',
    };
  const [, accessKeyId = '', date = '', region = '', service = '', signedList = '', given = ''] = m;
  if (service !== o.service)
    return {
      ok: false,
      type: 'InvalidSignatureException',
      message: `Credential should be scoped to correct service: '${o.service}', not '${service}'`,
    };
  const amzDate = r.headers['x-amz-date'];
  const dm = amzDate === undefined ? null : AMZ_DATE.exec(amzDate);
  if (amzDate === undefined || !dm)
    return { ok: false, type: 'IncompleteSignatureException', message: 'X-Amz-Date header is missing or malformed' };
  if (dm[1] !== date)
    return { ok: false, type: 'InvalidSignatureException', message: 'Credential date does not match X-Amz-Date' };
  const signed = signedList.split(';');
  if (!signed.includes('host') || !signed.includes('x-amz-date'))
    return { ok: false, type: 'InvalidSignatureException', message: 'SignedHeaders must include host and x-amz-date' };
  if (r.headers['x-amz-security-token'] !== undefined && !signed.includes('x-amz-security-token')) {
    return { ok: false, type: 'InvalidSignatureException', message: 'X-Amz-Security-Token must be signed' };
  }
  const at = Date.UTC(
    +amzDate.slice(0, 4),
    +amzDate.slice(4, 6) - 1,
    +amzDate.slice(6, 8),
    +amzDate.slice(9, 11),
    +amzDate.slice(11, 13),
    +amzDate.slice(13, 15),
  );
  if (Math.abs((o.now ?? Date.now()) - at) > SIGV4_MAX_SKEW_MS) {
    return {
      ok: false,
      type: 'InvalidSignatureException',
      message: `Signature expired or not yet current: ${amzDate} is more than 5 minutes from the server's time`,
    };
  }
  // The key id is compared only after the cheap checks; unknown keys answer like AWS does.
  if (accessKeyId !== credentials.accessKeyId)
    return {
      ok: false,
      type: 'UnrecognizedClientException',
      message: 'The security token included in the request is invalid.',
    };
  const claimed = r.headers['x-amz-content-sha256'];
  if (claimed !== undefined && claimed !== (await sha256Hex(r.body)))
    return { ok: false, type: 'InvalidSignatureException', message: 'X-Amz-Content-Sha256 does not match the body' };
  const expected = await signature(r, signed, amzDate, { date, region, service }, credentials.secretAccessKey);
  if (!sameHex(expected, given)) {
    return {
      ok: false,
      type: 'InvalidSignatureException',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    };
  }
  return { ok: true, accessKeyId, region, service };
}

/**
 * Signs a request: returns the headers to add (`x-amz-date`, `authorization`). `host` must be
 * in `r.headers` (it is signed); every header given is signed.
 */
export async function signSigV4(
  r: SigV4Request,
  credentials: AwsCredentials,
  o: { region: string; service: string; now?: number },
): Promise<{ 'x-amz-date': string; authorization: string; 'x-amz-security-token'?: string }> {
  const iso = new Date(o.now ?? Date.now()).toISOString();
  const amzDate = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const date = amzDate.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) headers[k.toLowerCase()] = v;
  headers['x-amz-date'] = amzDate;
  // Temporary credentials are only good with their session token, which is signed too.
  if (credentials.sessionToken !== undefined) headers['x-amz-security-token'] = credentials.sessionToken;
  if (headers.host === undefined) throw new Error('signSigV4: the host header is required');
  const signed = Object.keys(headers).sort();
  const sig = await signature(
    { ...r, headers },
    signed,
    amzDate,
    { date, region: o.region, service: o.service },
    credentials.secretAccessKey,
  );
  return {
    'x-amz-date': amzDate,
    authorization: `${ALGORITHM} Credential=${credentials.accessKeyId}/${date}/${o.region}/${o.service}/aws4_request, SignedHeaders=${signed.join(';')}, Signature=${sig}`,
    ...(credentials.sessionToken !== undefined && { 'x-amz-security-token': credentials.sessionToken }),
  };
}

/**
 * POSTs `body` to `url`, signed: `host` is signed as the URL names it and left to fetch to send,
 * with every header given and the session token of temporary credentials.
 */
export async function fetchSigned(
  url: URL,
  r: { headers: Record<string, string>; body: string },
  credentials: AwsCredentials,
  o: { region: string; service: string; now?: number; fetch?: typeof fetch },
): Promise<Response> {
  const signed = await signSigV4(
    { method: 'POST', target: `${url.pathname}${url.search}`, headers: { ...r.headers, host: url.host }, body: r.body },
    credentials,
    { region: o.region, service: o.service, ...(o.now !== undefined && { now: o.now }) },
  );
  return (o.fetch ?? fetch)(url, { method: 'POST', headers: { ...r.headers, ...signed }, body: r.body });
}
