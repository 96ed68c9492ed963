const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isUnsafeMethod(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/** What the origin checks look at; plain values, so any router's context can supply them. */
export interface OriginCheck {
  /** The request's `Origin` header. */
  origin: string | undefined;
  requestUrl: string;
  /** The `ALLOWED_ORIGINS` var: comma-separated origins besides the app's own. */
  allowedOrigins: string | undefined;
}

function allowedOrigins(check: OriginCheck): Set<string> {
  const own = new URL(check.requestUrl).origin;
  const extra = (check.allowedOrigins ?? '')
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
export function originAllowed(check: OriginCheck): boolean {
  if (check.origin === undefined || check.origin === 'null') return false;
  return allowedOrigins(check).has(check.origin);
}

/** For unauthenticated endpoints (login): refuse only an Origin that is present and foreign. */
export function originNotForeign(check: OriginCheck): boolean {
  if (check.origin === undefined) return true;
  return check.origin !== 'null' && allowedOrigins(check).has(check.origin);
}
