import { checkWorkspacePath, type WorkspaceEntry, type WorkspaceManifest } from '@switchyard/protocol';
import { Hono } from 'hono';
import type { AppDeps } from '../context.ts';
import { apiError } from '../errors.ts';
import { hubFor, type SessionsEnv, sessionAccess } from '../sessions/access.ts';
import { workspaceLimitsOf } from '../settings/schema.ts';
import { readSettings } from '../settings/store.ts';
import { putBlob } from './blobs.ts';
import { openBlob, openWorkspaceBlob } from './packs.ts';
import { readBody } from '../request-body.ts';
import { attachmentDisposition, contentTypeFor } from './content-type.ts';
import { workspaceDiffRoutes } from './diff-routes.ts';
import type { WorkspaceResult } from './hub-workspace.ts';
import { tarStream, type TarFile } from './tar.ts';

// The Files API (docs/DESIGN.md "Workspaces"): a person's view of the durable workspace. It reads
// and writes the durable copy whether or not a runner is live; a write reaches a live runner
// through the hub (workspace_sync), so the agent sees it on its next tool call. Documented in
// openapi-workspace.ts (the wildcard paths are routed here, outside the OpenAPI router).

/** The workspace path after `/files/`, decoded and checked; a refusal names `path`. */
function filePath(url: string): { ok: true; path: string } | { ok: false; message: string } {
  const pathname = new URL(url).pathname;
  const at = pathname.indexOf('/files/');
  const raw = at === -1 ? '' : pathname.slice(at + '/files/'.length);
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return { ok: false, message: 'path: is not valid percent-encoding' };
  }
  const checked = checkWorkspacePath(decoded);
  return checked.ok ? { ok: true, path: checked.path } : { ok: false, message: `path: ${checked.message}` };
}

async function manifestOf(env: Env, sessionId: string) {
  const { settings } = await readSettings(env.DB);
  const limits = workspaceLimitsOf(settings);
  // Typed here: the Durable Object stub's inferred RPC types are not always precise enough.
  const r: WorkspaceResult<WorkspaceManifest> = await hubFor(env, sessionId).workspaceManifest(limits);
  return { r, limits };
}

/** Mounted inside the sessions router, behind its authentication. */
export function workspaceFileRoutes(deps: AppDeps) {
  const app = new Hono<SessionsEnv>();
  // Owner, or an admin (audited); anyone else 404. Writes: the owner only (an admin gets 403).
  app.use('/:id/files', sessionAccess(deps, 'read'));
  app.on('GET', '/:id/files/*', sessionAccess(deps, 'read'));
  app.on(['PUT', 'DELETE'], '/:id/files/*', sessionAccess(deps, 'owner'));
  app.use('/:id/archive', sessionAccess(deps, 'read'));
  app.route('/', workspaceDiffRoutes(deps));

  app.get('/:id/files', async (c) => {
    const { r } = await manifestOf(c.env, c.get('session').id);
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    const files = r.value.files.map((f) => ({
      path: f.path,
      size: f.size,
      modifiedAt: new Date(f.modifiedAt).toISOString(),
    }));
    return c.json({ files, totalBytes: r.value.files.reduce((n, f) => n + f.size, 0) }, 200);
  });

  app.get('/:id/files/*', async (c) => {
    const p = filePath(c.req.url);
    if (!p.ok) return apiError(c, 400, 'invalid_request', p.message, 'path');
    const session = c.get('session').id;
    const { r } = await manifestOf(c.env, session);
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    const entry = r.value.files.find((f) => f.path === p.path);
    if (entry === undefined) return apiError(c, 404, 'not_found', `no file ${p.path} in the workspace`);
    const obj = await openWorkspaceBlob(c.env, session, entry.sha256);
    if (obj === null) return apiError(c, 404, 'not_found', `the content of ${p.path} is missing`);
    return new Response(obj.body, {
      headers: {
        'Content-Type': contentTypeFor(p.path),
        'Content-Disposition': attachmentDisposition(p.path),
        'Content-Length': String(entry.size),
        'X-Content-Type-Options': 'nosniff',
        ETag: `"${entry.sha256}"`,
      },
    });
  });

  app.put('/:id/files/*', async (c) => {
    const p = filePath(c.req.url);
    if (!p.ok) return apiError(c, 400, 'invalid_request', p.message, 'path');
    const session = c.get('session').id;
    const { settings } = await readSettings(c.env.DB);
    const limits = workspaceLimitsOf(settings);
    const body = await readBody(c.req.raw, limits.maxFileBytes);
    if (!body.ok) {
      return apiError(
        c,
        413,
        'payload_too_large',
        `maxFileBytes: a file may hold at most ${limits.maxFileBytes} bytes`,
        'maxFileBytes',
      );
    }
    const hub = hubFor(c.env, session);
    const entry = (sha256: string): WorkspaceEntry => ({
      path: p.path,
      sha256,
      size: body.value.byteLength,
      executable: false,
      modifiedAt: Date.now(),
    });
    // Asked first, so a write the hub refuses (over a limit, a path clash) stores nothing: no sweep
    // runs while every commit is refused, and refused content would sit in R2 past every limit.
    // Whether it would be taken does not depend on the content, so the content is not hashed twice.
    const would = await hub.workspaceCommit(
      { upserts: [entry('0'.repeat(64))], deletes: [] },
      { kind: 'user' },
      limits,
      { dryRun: true },
    );
    if (!would.ok) return apiError(c, would.status, would.code, would.message, would.field);
    const sha256 = await putBlob(c.env.TRANSCRIPTS, session, body.value);
    const r = await hub.workspaceCommit({ upserts: [entry(sha256)], deletes: [] }, { kind: 'user' }, limits);
    if (!r.ok) return apiError(c, r.status, r.code, r.message, r.field);
    return c.json({ path: p.path, size: body.value.byteLength, sha256 }, 201);
  });

  app.delete('/:id/files/*', async (c) => {
    const p = filePath(c.req.url);
    if (!p.ok) return apiError(c, 400, 'invalid_request', p.message, 'path');
    const session = c.get('session').id;
    const { r, limits } = await manifestOf(c.env, session);
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    if (!r.value.files.some((f) => f.path === p.path))
      return apiError(c, 404, 'not_found', `no file ${p.path} in the workspace`);
    const done = await hubFor(c.env, session).workspaceCommit(
      { upserts: [], deletes: [p.path] },
      { kind: 'user' },
      limits,
    );
    if (!done.ok) return apiError(c, done.status, done.code, done.message, done.field);
    return c.body(null, 204);
  });

  app.get('/:id/archive', async (c) => {
    const session = c.get('session').id;
    const { r } = await manifestOf(c.env, session);
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    const bucket = c.env.TRANSCRIPTS;
    const located = await hubFor(c.env, session).workspaceBlobLocations(r.value.files.map((f) => f.sha256));
    const files: TarFile[] = r.value.files.map((f) => ({
      path: f.path,
      size: f.size,
      executable: f.executable,
      modifiedAt: f.modifiedAt,
      open: async () => {
        const obj = await openBlob(bucket, session, f.sha256, located.get(f.sha256));
        if (obj === null) throw new Error(`${f.path}: content missing`);
        return obj.body;
      },
    }));
    const gz = tarStream(files).pipeThrough(new CompressionStream('gzip'));
    return new Response(gz, {
      headers: {
        'Content-Type': 'application/gzip',
        'Content-Disposition': `attachment; filename="session-${session}.tar.gz"`,
        'X-Content-Type-Options': 'nosniff',
      },
    });
  });
  return app;
}
