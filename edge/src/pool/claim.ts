import type { UserMessage } from '@switchyard/protocol';
import type { Meta } from '../hub/lifecycle.ts';
import { poolCoordinator } from './config.ts';

// The session hub's side of the warm runner pool (docs/DESIGN.md "Warm runner pool"): before it
// launches a runner, a hub asks the coordinator for a pooled one. Only a session with nothing to
// restore may take one: a pooled runner's CLI is already running a fresh conversation, so a
// transcript could not be resumed; in approval mode `ask` the CLI must be started with the
// approval hook, which a pooled CLI was not; and files a person put into the durable workspace
// before the first message must be in place before a CLI sees that message, which a cold runner
// guarantees (it pulls them before it spawns its CLI) and a prewarmed one cannot. A session started
// from a repository never takes one either: its clone must be in place before the CLI starts.

/** Whether this launch may take a pooled runner (pure). `workspaceEmpty`: no file was ever committed. */
export function mayUsePool(meta: Pick<Meta, 'session' | 'transcript'>, workspaceEmpty: boolean): boolean {
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
    workspaceEmpty: boolean;
    /** The queued first message, handed to the runner with the claim when it is small enough. */
    first?: { messageId: string; message: UserMessage };
  },
): Promise<PooledClaim | null> {
  const session = meta.session;
  if (session === null || !mayUsePool(meta, launch.workspaceEmpty) || env.POOL_COORDINATOR === undefined) return null;
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
