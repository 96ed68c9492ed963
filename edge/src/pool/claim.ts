import type { UserMessage } from '@switchyard/protocol';
import type { Meta } from '../hub/lifecycle.ts';
import { poolCoordinator } from './config.ts';

// The session hub's side of the warm runner pool (docs/DESIGN.md "Warm runner pool"): before it
// launches a runner, a hub asks the coordinator for a pooled one. Any launch may take one, a
// resumed session's too: a pooled runner is a cold runner already past provisioning and its own
// start. Whatever the welcome brings (a transcript to resume, files, a repository to clone,
// approval mode `ask`) replaces its prewarmed CLI with one started after the restore, exactly as a
// cold runner starts its CLI; so the first message rides with the claim only when there is
// nothing to restore.

/**
 * The launch has nothing to restore (pure): no transcript, no file ever committed to the durable
 * workspace (`workspaceEmpty`), no repository, approval mode `auto`. A CLI started before the
 * welcome can then take the first message as it is.
 */
export function nothingToRestore(meta: Pick<Meta, 'session' | 'transcript'>, workspaceEmpty: boolean): boolean {
  const session = meta.session;
  if (session === null) return false;
  return (
    meta.transcript === null &&
    (session.approvals ?? 'auto') === 'auto' &&
    session.repository === undefined &&
    workspaceEmpty
  );
}

export interface PooledClaim {
  runnerId: string;
  ref: string;
  /** The first message went with the claim (see PoolClaimSchema `first`). */
  firstSent: boolean;
}

/**
 * A pooled runner now serving this launch (it dials `hubUrl` with `runnerToken`), or null: launch
 * cold. The coordinator being unreachable is a null too; the session must not fail for the pool.
 */
export async function claimPooledRunner(
  env: Env,
  meta: Meta,
  launch: {
    hubUrl: string;
    runnerToken: string;
    /**
     * The queued first message, handed to the runner with the claim when it is small enough; only
     * with nothing to restore (the runner gives it to its prewarmed CLI before the welcome).
     */
    first?: { messageId: string; message: UserMessage };
  },
): Promise<PooledClaim | null> {
  const session = meta.session;
  if (session === null || env.POOL_COORDINATOR === undefined) return null;
  try {
    return await poolCoordinator(env).claim({
      backend: session.backend,
      model: meta.model,
      sessionId: session.id,
      hubUrl: launch.hubUrl,
      runnerToken: launch.runnerToken,
      ...(launch.first !== undefined && { first: launch.first }),
    });
  } catch (err) {
    console.error('session hub: pool claim failed, launching cold:', err instanceof Error ? err.message : String(err));
    return null;
  }
}
