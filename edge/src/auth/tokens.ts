import { toBase64Url, toHex } from '@switchyard/protocol';
import { randomBytes } from './random.ts';

export type TokenKind = 'session' | 'api';

/** Login tokens (cookie or bearer) live a week; personal API tokens choose their own expiry. */
export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const API_TOKEN_DEFAULT_DAYS = 90;
export const API_TOKEN_MAX_DAYS = 365;
export const DAY_MS = 24 * 60 * 60 * 1000;

// The prefix lets secret scanners and humans recognise a leaked Switchyard token.
const PREFIX = 'sy_';
export const TOKEN_PATTERN = /^sy_[A-Za-z0-9_-]{43}$/;

/** 256 random bits: too many to guess, so a fast hash is enough for storage. */
export function generateTokenSecret(): string {
  return PREFIX + toBase64Url(randomBytes(32));
}

/**
 * Only this digest is stored. Lookup is by digest through a unique index; comparing digests of
 * high-entropy secrets leaks nothing useful through timing, unlike comparing the secrets.
 */
export async function hashToken(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret));
  return toHex(new Uint8Array(digest));
}
