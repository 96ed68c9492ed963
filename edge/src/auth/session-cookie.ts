import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';

const SESSION_COOKIE = 'sy_session';
/**
 * Over https the cookie is `__Host-sy_session`: browsers accept that name only with Secure,
 * Path=/ and no Domain, so a sibling subdomain or a plain-http page cannot set or shadow it
 * (cookie tossing). Plain http (loopback dev) cannot carry Secure, so there it keeps the bare name.
 */
const HOST_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

// Browsers refuse Secure cookies over plain http, and local dev is plain http on loopback.
function isLocalHost(hostname: string): boolean {
  return (
    hostname === 'localhost' || hostname.endsWith('.localhost') || hostname === '127.0.0.1' || hostname === '[::1]'
  );
}

function secure(c: Context): boolean {
  return !isLocalHost(new URL(c.req.url).hostname);
}

/** `__Host-` needs Secure, which needs https: a loopback origin served over https gets it too. */
function cookieName(c: Context): string {
  return secure(c) || new URL(c.req.url).protocol === 'https:' ? HOST_SESSION_COOKIE : SESSION_COOKIE;
}

export function setSessionCookie(c: Context, secret: string, expiresAt: number, now: number): void {
  const name = cookieName(c);
  setCookie(c, name, secret, {
    httpOnly: true,
    sameSite: 'Lax',
    secure: name === HOST_SESSION_COOKIE || secure(c),
    path: '/',
    maxAge: Math.max(0, Math.floor((expiresAt - now) / 1000)),
  });
}

export function clearSessionCookie(c: Context): void {
  const name = cookieName(c);
  deleteCookie(c, name, {
    httpOnly: true,
    sameSite: 'Lax',
    secure: name === HOST_SESSION_COOKIE || secure(c),
    path: '/',
  });
}

export function readSessionCookie(c: Context): string | undefined {
  // Only the name this origin sets: over https a bare `sy_session` could have been planted.
  return getCookie(c, cookieName(c));
}
