import type { ModelSelection } from './config.ts';
import { runnerError, type Result } from './errors.ts';

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
/** What the CLI presents when the endpoint needs no key (the offline model accepts any). */
const DUMMY_API_KEY = 'switchyard-no-key';

export interface ModelAccess {
  /** The URL the CLI talks to. */
  baseUrl: string;
  /** The key the CLI presents to baseUrl. */
  apiKey: string;
  /** For reports: where the credential comes from, never its value. */
  credential: 'provider_key' | 'endpoint_key' | 'none';
}

/**
 * Resolves where model traffic goes upstream. The CLI is never handed this
 * directly: serve, once and probe put the loopback credential proxy
 * (sandbox/model-proxy.ts) in front of it, which holds the key.
 */
export function resolveModelAccess(model: ModelSelection): Result<ModelAccess> {
  switch (model.kind) {
    case 'endpoint':
      return {
        ok: true,
        value: {
          baseUrl: model.baseUrl,
          apiKey: model.apiKey ?? DUMMY_API_KEY,
          credential: model.apiKey ? 'endpoint_key' : 'none',
        },
      };
    case 'provider':
      return { ok: true, value: { baseUrl: ANTHROPIC_BASE_URL, apiKey: model.apiKey, credential: 'provider_key' } };
    case 'none':
      return {
        ok: false,
        error: runnerError(
          'no_model',
          'no model configured: set SWITCHYARD_MODEL_URL (an Anthropic-Messages endpoint) or ANTHROPIC_API_KEY',
        ),
      };
  }
}
