import { type ErrorInfo, RepositorySchema, type Repository } from '@switchyard/protocol';
import type { HubSessionInfo } from './types.ts';

// Which repository a runner must clone before its first CLI (docs/DESIGN.md "Start from a
// repository"): the session's, for as long as no clone has been committed as the workspace's
// baseline. Once it has, runners restore the durable workspace like any other session's.

/** What a start needs to know: the repository to clone (undefined: none), or why it cannot start. */
export type PendingRepository = { ok: true; value: Repository | undefined } | { ok: false; error: ErrorInfo };

/**
 * The repository for `welcome.repository`. Pure; the stored value is re-checked against the
 * contract, and one it no longer passes (stored before a rule tightened) is an error: starting
 * without it would hand the person an empty workspace they did not ask for.
 */
export function pendingRepository(
  session: Pick<HubSessionInfo, 'repository'>,
  baselineCommitted: boolean,
): PendingRepository {
  if (session.repository === undefined || baselineCommitted) return { ok: true, value: undefined };
  const checked = RepositorySchema.safeParse(session.repository);
  if (checked.success) return { ok: true, value: checked.data };
  const issue = checked.error.issues[0];
  const field = ['repository', ...(issue?.path ?? []).map(String)].join('.');
  return {
    ok: false,
    error: {
      code: 'repository_clone_failed',
      message: `${field}: the session's stored repository no longer passes the contract (${issue?.message ?? 'invalid'}); it cannot be cloned, so the session cannot start (delete it and create a new one)`,
      retryable: false,
    },
  };
}
