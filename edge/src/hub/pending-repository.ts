import { RepositorySchema, type Repository } from '@switchyard/protocol';
import type { HubSessionInfo } from './types.ts';

// Which repository a runner must clone before its first CLI (docs/DESIGN.md "Start from a
// repository"): the session's, for as long as no clone has been committed as the workspace's
// baseline. Once it has, runners restore the durable workspace like any other session's.

/** The repository for `welcome.repository`, or undefined. Pure; the stored value is re-checked against the contract. */
export function pendingRepository(
  session: Pick<HubSessionInfo, 'repository'>,
  baselineCommitted: boolean,
): Repository | undefined {
  if (session.repository === undefined || baselineCommitted) return undefined;
  const checked = RepositorySchema.safeParse(session.repository);
  return checked.success ? checked.data : undefined;
}
