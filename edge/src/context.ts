import { OpenAPIHono } from '@hono/zod-openapi';
import type { ResolvedToken } from './auth/token-store.ts';
import type { TokenKind } from './auth/tokens.ts';
import type { Clock } from './clock.ts';
import type { BackendProbe } from './settings/backend-probe.ts';
import type { PublicUser } from './users/schemas.ts';
import { validationHook } from './validation.ts';

export interface AppDeps {
  clock: Clock;
  /** Built per request because a real probe talks to bindings (the hub, a runner). */
  probeFor: (env: Env) => BackendProbe;
  /** How long a probe may take before it counts as "unavailable". */
  probeTimeoutMs: number;
  /** How long GET /api/settings trusts a stored probe result. */
  probeCacheTtlMs: number;
  /** The login's password check; a parameter so a test can count how many guesses were evaluated. */
  verifyPassword: (password: string, stored: string) => Promise<boolean>;
}

export interface AuthContext {
  user: PublicUser;
  tokenId: string;
  /** A login session or a personal API token: some actions need the former. */
  kind: TokenKind;
  /** Cookie-authenticated requests are the ones CSRF can forge. */
  via: 'bearer' | 'cookie';
}

/** A token lookup started ahead of `authenticate` (batched with the request's own reads). */
export interface TokenLookup {
  secret: string;
  resolved: Promise<ResolvedToken | null>;
}

export type AppEnv = {
  Bindings: Env;
  Variables: { auth: AuthContext; tokenLookup?: TokenLookup };
};

/** Every router of the API: invalid input becomes the API's 400. `E` adds router-local variables. */
export function newRouter<E extends AppEnv = AppEnv>() {
  return new OpenAPIHono<E>({ defaultHook: validationHook });
}
