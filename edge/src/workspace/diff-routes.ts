import { checkWorkspacePath } from '@switchyard/protocol';
import { Hono } from 'hono';
import type { AppDeps } from '../context.ts';
import { apiError } from '../errors.ts';
import { hubFor, type SessionsEnv, sessionAccess } from '../sessions/access.ts';
import { BATCH_BYTES, DIFF_LIMITS, workspaceDiff } from './diff.ts';
import type { WorkspaceDiffInputs, WorkspaceResult } from './hub-workspace.ts';
import { readBlobs } from './packs.ts';

// `GET /api/sessions/:id/diff`: the durable workspace now against its baseline (the repository
// clone's commit; none: an empty tree), as `git diff` text. Same access as the Files API's reads.
// Served as text/x-diff with nosniff, so a browser shows or downloads it and never runs it.

/** Storage does not hold what the manifest names (a blob gone, or not the size it says). */
class StorageMismatch extends Error {}

/** Mounted inside the sessions router, behind its authentication (file-routes.ts mounts it). */
export function workspaceDiffRoutes(deps: AppDeps) {
  const app = new Hono<SessionsEnv>();
  app.use('/:id/diff', sessionAccess(deps, 'read'));

  app.get('/:id/diff', async (c) => {
    const only = c.req.query('path');
    let path: string | undefined;
    if (only !== undefined) {
      const checked = checkWorkspacePath(only);
      if (!checked.ok) return apiError(c, 400, 'invalid_request', `path: ${checked.message}`, 'path');
      path = checked.path;
    }
    const session = c.get('session').id;
    // Typed here: the Durable Object stub's inferred RPC types are not always precise enough.
    const r: WorkspaceResult<WorkspaceDiffInputs> = await hubFor(c.env, session).workspaceDiffInputs();
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    // One hub call to locate a batch's blobs, then one ranged read per pack (packs.ts).
    const read = async (shas: string[]) => {
      const located = await hubFor(c.env, session).workspaceBlobLocations(shas);
      // A batch is at most BATCH_BYTES by the manifest's sizes; more means storage disagrees.
      const got = await readBlobs(
        c.env.TRANSCRIPTS,
        session,
        shas,
        located,
        Math.max(BATCH_BYTES, 2 * DIFF_LIMITS.maxFileBytes),
      );
      if (got === 'too_large') throw new StorageMismatch('a batch larger than the manifest says');
      return got.map((b, i) => {
        if (b === null) throw new StorageMismatch(`missing blob ${shas[i]}`);
        return b;
      });
    };
    try {
      const diff = await workspaceDiff(r.value.before, r.value.after, read, path === undefined ? {} : { path });
      return c.body(diff.text, 200, {
        'Content-Type': 'text/x-diff; charset=utf-8',
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'no-store',
      });
    } catch (err) {
      if (err instanceof StorageMismatch)
        return apiError(c, 500, 'internal', 'the stored content of a workspace file does not match its manifest');
      throw err;
    }
  });
  return app;
}
