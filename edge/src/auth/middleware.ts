import { bearerToken } from '@switchyard/protocol';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppDeps, AppEnv } from '../context.ts';
import { apiError } from '../errors.ts';
import { isUnsafeMethod, type OriginCheck, originAllowed } from './csrf.ts';
import { readSessionCookie } from './session-cookie.ts';
import { resolveToken, touchToken } from './token-store.ts';
import { TOKEN_PATTERN } from './tokens.ts';

/** The request's side of the CSRF origin checks. */
export function originCheckOf<E extends AppEnv>(c: Context<E>): OriginCheck {
  return { origin: c.req.header('Origin'), requestUrl: c.req.url, allowedOrigins: c.env.ALLOWED_ORIGINS };
}

/**
 * The secret `authenticate` would look up for this request, if it gets that far: a token-shaped
 * bearer token, else a token-shaped session cookie on a request that passes the CSRF origin check.
 * Says nothing of whether it is valid. Lets a router start the lookup ahead, in one D1 batch with
 * its own reads (sessions/access.ts), and never for a request `authenticate` refuses unread.
 */
export function tokenToLookUp<E extends AppEnv>(c: Context<E>): string | undefined {
  const header = c.req.header('Authorization');
  if (header === undefined && isUnsafeMethod(c.req.method) && !originAllowed(originCheckOf(c))) return undefined;
  const secret = header !== undefined ? bearerToken(header) : readSessionCookie(c);
  return secret !== undefined && TOKEN_PATTERN.test(secret) ? secret : undefined;
}

/**
 * Resolves the caller from `Authorization: Bearer` or, failing that, the session cookie. A bearer
 * header wins and is never silently ignored: a bad one is a 401 even if a good cookie is present.
 * Generic so a router whose env adds variables (sessions: the loaded session) uses it as is.
 */
export function authenticate<E extends AppEnv = AppEnv>(deps: AppDeps): MiddlewareHandler<E> {
  return async (c, next) => {
    const header = c.req.header('Authorization');
    let secret: string;
    let via: 'bearer' | 'cookie';
    if (header !== undefined) {
      const token = bearerToken(header);
      if (token === undefined) {
        return apiError(c, 401, 'unauthenticated', 'Authorization header must be "Bearer <token>"');
      }
      secret = token;
      via = 'bearer';
    } else {
      const cookie = readSessionCookie(c);
      if (cookie === undefined) return apiError(c, 401, 'unauthenticated', 'authentication required');
      // Checked before the token is even looked up: a forged cross-site request learns nothing.
      if (isUnsafeMethod(c.req.method) && !originAllowed(originCheckOf(c))) {
        return apiError(
          c,
          403,
          'csrf_rejected',
          "cross-site request refused: a cookie-authenticated request must carry this app's Origin (scripts should use a bearer token)",
        );
      }
      secret = cookie;
      via = 'cookie';
    }
    if (!TOKEN_PATTERN.test(secret)) return apiError(c, 401, 'unauthenticated', 'invalid, expired or revoked token');
    const now = deps.clock();
    const early = c.get('tokenLookup');
    const resolved = await (early?.secret === secret ? early.resolved : resolveToken(c.env.DB, secret, now));
    if (resolved === null) return apiError(c, 401, 'unauthenticated', 'invalid, expired or revoked token');
    await touchToken(c.env.DB, resolved, now);
    c.set('auth', { user: resolved.user, tokenId: resolved.tokenId, kind: resolved.kind, via });
    await next();
    return undefined;
  };
}

export const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.get('auth').user.role !== 'admin') return apiError(c, 403, 'forbidden', 'admin access required');
  await next();
  return undefined;
};
