// What the CLI is pointed at: always the runner's loopback credential proxy,
// holding the real key (if any) and forwarding to SWITCHYARD_MODEL_URL or
// the provider. The CLI gets the proxy's URL and a per-session key.
import type { ModelSelection } from '../config.ts';
import type { Result } from '../errors.ts';
import { resolveModelAccess, type ModelAccess } from '../model-access.ts';
import { startCredentialProxy } from './credential-proxy.ts';

export interface ProxiedModelAccess extends ModelAccess {
  close(): Promise<void>;
}

export async function startModelAccess(selection: ModelSelection): Promise<Result<ProxiedModelAccess>> {
  const upstream = resolveModelAccess(selection);
  if (!upstream.ok) return upstream;
  const realKey = selection.kind === 'none' ? undefined : selection.apiKey;
  const proxy = await startCredentialProxy({ upstream: upstream.value.baseUrl, apiKey: realKey });
  return { ok: true, value: { baseUrl: proxy.url, apiKey: proxy.sessionKey, credential: upstream.value.credential, close: proxy.close } };
}
