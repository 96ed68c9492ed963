import { RUNNER_CONNECT_PATH } from '@switchyard/protocol';
import { POOL_CONNECT_PATH } from '@switchyard/protocol/pool';
import { locationHintFor } from './location-hint.ts';

// The warm runner pool's fixed points: the coordinator's name, the pool token's scope, the age
// limit and where pooled runners dial (docs/DESIGN.md "Warm runner pool").

/** One coordinator per deployment: claims for every backend meet in one object. */
export const POOL_COORDINATOR_NAME = 'pool';

/**
 * The `sessionId` claim of every pool token. Not a session id (sessions are ULIDs), so a pool
 * token taken to the session connect route opens no hub's door; the pool route accepts only it.
 */
export const POOL_TOKEN_SCOPE = '~pool';

/** Default age limit of an idle pooled runner: replaced after this (fresh image, fresh CLI). */
const DEFAULT_MAX_AGE_SECONDS = 30 * 60;

export function poolMaxAgeMs(env: Env): number {
  const raw = env.POOL_MAX_AGE_SECONDS;
  const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
  const seconds = Number.isFinite(n) ? Math.min(24 * 3600, Math.max(1, n)) : DEFAULT_MAX_AGE_SECONDS;
  return Math.round(seconds * 1000);
}

/** Where pooled runners dial: the runner link's URL with the pool's path. */
export function poolUrlFrom(hubUrl: string): string {
  const url = new URL(hubUrl);
  url.pathname = url.pathname.endsWith(RUNNER_CONNECT_PATH)
    ? url.pathname.slice(0, -RUNNER_CONNECT_PATH.length) + POOL_CONNECT_PATH
    : POOL_CONNECT_PATH;
  return url.toString();
}

/** The coordinator, placed by the runners' region when it is first created (location-hint.ts). */
export function poolCoordinator(
  env: Pick<Env, 'POOL_COORDINATOR' | 'AWS_REGION'>,
): DurableObjectStub<import('./coordinator.ts').PoolCoordinator> {
  const locationHint = locationHintFor(env.AWS_REGION);
  return env.POOL_COORDINATOR.get(
    env.POOL_COORDINATOR.idFromName(POOL_COORDINATOR_NAME),
    locationHint === undefined ? undefined : { locationHint },
  );
}
