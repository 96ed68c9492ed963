import type { Context } from 'hono';
import type { AppEnv } from '../context.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isUnsafeMethod(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

function allowedOrigins(c: Context<AppEnv>): Set<string> {
  const own = new URL(c.req.url).origin;
  const extra = (c.env.ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return new Set([own, ...extra]);
}

/**
 * Whether a cookie-authenticated unsafe request may proceed. Browsers send `Origin` on every
 * non-GET fetch and form post, so a missing one means a client that is not a browser page;
 * such clients must use a bearer token (which a cross-site page cannot attach).
 */
export function originAllowed(c: Context<AppEnv>): boolean {
  const origin = c.req.header('Origin');
  if (origin === undefined || origin === 'null') return false;
  return allowedOrigins(c).has(origin);
}

/** For unauthenticated endpoints (login): refuse only an Origin that is present and foreign. */
export function originNotForeign(c: Context<AppEnv>): boolean {
  const origin = c.req.header('Origin');
  if (origin === undefined) return true;
  return origin !== 'null' && allowedOrigins(c).has(origin);
}
