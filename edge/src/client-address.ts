import type { Context } from 'hono';

/**
 * The caller's IP as Cloudflare saw it. Cloudflare overwrites CF-Connecting-IP at its edge, so
 * a client cannot spoof it in production; locally (no Cloudflare in front) it is absent and every
 * caller shares one throttle bucket.
 */
export function clientAddress(c: Context): string {
  return c.req.header('CF-Connecting-IP')?.trim().slice(0, 64) || 'unknown';
}
