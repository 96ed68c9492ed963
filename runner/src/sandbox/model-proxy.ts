// What the CLI is pointed at: always the runner's credential proxy, holding the real key (if
// any) and forwarding to SWITCHYARD_MODEL_URL or the provider. The CLI gets a URL and a
// per-session key. Under bubblewrap the proxy listens on a unix socket in a private directory
// (bound into the CLI's own network namespace and relayed there from MODEL_URL); otherwise on
// a loopback port.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelSelection } from '../config.ts';
import type { Result } from '../errors.ts';
import { resolveModelAccess, type ModelAccess } from '../model-access.ts';
import { MODEL_URL } from './bwrap.ts';
import { startCredentialProxy, type UpstreamProblem } from './credential-proxy.ts';
import type { SandboxMode } from './sandbox.ts';

export interface ProxiedModelAccess extends ModelAccess {
  /** bubblewrap: the proxy's socket, for `SessionPaths.modelSocket`. */
  socketPath?: string;
  /** From now on model calls go upstream (see `answerLocally`). */
  forwardUpstream(): void;
  /** A model call is coming: its upstream connection is opened now (credential-proxy.ts). */
  prepareCall(): void;
  close(): Promise<void>;
}

/**
 * `answerLocally`: a pooled runner before its claim; the proxy answers Messages calls itself
 * until `forwardUpstream()` (credential-proxy.ts).
 */
export async function startModelAccess(
  selection: ModelSelection,
  mode: SandboxMode,
  options: ModelRouteOptions = {},
): Promise<Result<ProxiedModelAccess>> {
  const upstream = resolveModelAccess(selection);
  if (!upstream.ok) return upstream;
  const realKey = selection.kind === 'none' ? undefined : selection.apiKey;
  const route = await startModelRoute(mode, upstream.value.baseUrl, realKey, options);
  return { ok: true, value: { ...route, credential: upstream.value.credential } };
}

export interface ModelRouteOptions {
  answerLocally?: boolean;
  /** Where the operator reads about model calls that failed upstream (credential-proxy.ts). */
  onUpstreamProblem?: (problem: UpstreamProblem) => void;
}

/** A credential proxy to `upstream` shaped for the sandbox `mode`; the URL and key are what the CLI is given. */
export async function startModelRoute(
  mode: SandboxMode,
  upstream: string,
  realKey: string | undefined,
  options: ModelRouteOptions = {},
): Promise<Omit<ProxiedModelAccess, 'credential'>> {
  if (mode !== 'bubblewrap') {
    const proxy = await startCredentialProxy({ upstream, apiKey: realKey, ...options });
    return {
      baseUrl: proxy.url,
      apiKey: proxy.sessionKey,
      forwardUpstream: proxy.forwardUpstream,
      prepareCall: proxy.prepareCall,
      close: proxy.close,
    };
  }
  // 0700: only this uid can reach the socket on the host side.
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-model-'));
  try {
    const proxy = await startCredentialProxy({
      upstream,
      apiKey: realKey,
      socketPath: join(dir, 'model.sock'),
      ...options,
    });
    return {
      baseUrl: MODEL_URL,
      apiKey: proxy.sessionKey,
      socketPath: join(dir, 'model.sock'),
      forwardUpstream: proxy.forwardUpstream,
      prepareCall: proxy.prepareCall,
      close: async () => {
        await proxy.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
