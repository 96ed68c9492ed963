// Shared by the workspace tests (files and diff): a raw request to the app (the workspace routes
// take and return bytes, which `call` in helpers.ts would JSON-encode) and a hex SHA-256 (the
// digest the workspace routes name blobs by).
import { env } from 'cloudflare:workers';
import { ORIGIN } from './helpers.ts';
import type { HubTestContext } from './hub-helpers.ts';

export async function req(
  ctx: HubTestContext,
  method: string,
  path: string,
  opts: { token?: string; body?: Uint8Array | string } = {},
): Promise<Response> {
  const headers = new Headers();
  if (opts.token !== undefined) headers.set('Authorization', `Bearer ${opts.token}`);
  const init: RequestInit = { method, headers };
  if (opts.body !== undefined) init.body = opts.body;
  return ctx.app.request(`${ORIGIN}${path}`, init, env);
}

export async function sha256(data: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', data))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');
}
