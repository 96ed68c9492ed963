import {
  BATCH_MAX_BLOBS,
  BATCH_MAX_BYTES,
  bearerToken,
  decodeFrames,
  encodeFrames,
  Sha256Schema,
  WorkspaceCommitSchema,
} from '@switchyard/protocol';
import { z } from 'zod';
import { Hono } from 'hono';
import type { AppDeps, AppEnv } from '../context.ts';
import { apiError } from '../errors.ts';
import { hubFor } from '../sessions/access.ts';
import { MIN_SECRET_LENGTH, verifyRunnerToken } from '../runner-link/token.ts';
import { workspaceLimitsOf } from '../settings/schema.ts';
import { readSettings } from '../settings/store.ts';
import { getLooseBlob, looseBlobSize, putBlob } from './blobs.ts';
import { limitBody, readBody } from '../request-body.ts';
import type { BlobLocation } from './pack-index.ts';
import { openPackedWorkspaceBlob, putPack, readBlobs } from './packs.ts';

// The runner's side of the durable workspace, over HTTP (RUNNER_WORKSPACE_PATH): blobs go
// straight between the runner and R2 through the Worker, never through the session hub's
// single thread or the runner link's frame limits; only the small manifest commit reaches the
// hub. The bearer is the runner's credential (the token its welcome gave it), and the hub
// confirms it names the current launch and runner on every call.

/** A `/blobs/get` names at most BATCH_MAX_BLOBS sha256s: a few tens of KiB of JSON. */
const BLOBS_GET_MAX_BODY = 64 * 1024;
/** A commit's JSON at its schema's most: 20,000 upserts and 20,000 deletes of 1 KiB paths. */
const COMMIT_MAX_BODY = 48 * 1024 * 1024;

type RunnerEnv = AppEnv & {
  Variables: { runnerSession: string; runnerLaunch: { launchId: string; runnerId: string } };
};

export function runnerWorkspaceRoutes(deps: AppDeps) {
  const app = new Hono<RunnerEnv>();
  app.use('*', async (c, next) => {
    const secret = c.env.RUNNER_TOKEN_SECRET ?? '';
    const token = bearerToken(c.req.header('Authorization'));
    if (secret.length < MIN_SECRET_LENGTH || token === undefined)
      return apiError(c, 401, 'unauthenticated', 'a runner credential is required');
    const verdict = await verifyRunnerToken(secret, token, deps.clock());
    // Only a credential (issued in a welcome) names a runner; the bootstrap token is for dialling.
    if (!verdict.ok || verdict.claims.kind !== 'credential')
      return apiError(c, 401, 'unauthenticated', 'a valid runner credential is required');
    const { sessionId, launchId, runnerId } = verdict.claims;
    if (!(await hubFor(c.env, sessionId).workspaceRunnerAllowed(launchId, runnerId)))
      return apiError(c, 401, 'unauthenticated', 'this runner is not the session’s current runner');
    c.set('runnerSession', sessionId);
    c.set('runnerLaunch', { launchId, runnerId });
    await next();
    return undefined;
  });

  app.get('/manifest', async (c) => {
    const { settings } = await readSettings(c.env.DB);
    const r = await hubFor(c.env, c.get('runnerSession')).workspaceManifest(workspaceLimitsOf(settings));
    if (!r.ok) return apiError(c, r.status, r.code, r.message);
    return c.json(r.value, 200);
  });

  app.get('/blobs/:sha', async (c) => {
    const sha = Sha256Schema.safeParse(c.req.param('sha'));
    if (!sha.success) return apiError(c, 400, 'invalid_request', 'sha256: must be a lowercase hex sha256', 'sha256');
    // The runner asks one by one only for files too big for a batch, which are never packed:
    // their own object first spares the hub a call.
    const session = c.get('runnerSession');
    const obj =
      (await getLooseBlob(c.env.TRANSCRIPTS, session, sha.data)) ??
      (await openPackedWorkspaceBlob(c.env, session, sha.data));
    if (obj === null) return apiError(c, 404, 'not_found', 'no such blob');
    return new Response(obj.body, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(obj.size) },
    });
  });

  app.put('/blobs/:sha', async (c) => {
    const sha = Sha256Schema.safeParse(c.req.param('sha'));
    if (!sha.success) return apiError(c, 400, 'invalid_request', 'sha256: must be a lowercase hex sha256', 'sha256');
    const { settings } = await readSettings(c.env.DB);
    const max = settings.workspaceMaxFileBytes;
    const body = await readBody(c.req.raw, max);
    if (!body.ok)
      return apiError(
        c,
        413,
        'payload_too_large',
        `maxFileBytes: a file may hold at most ${max} bytes`,
        'maxFileBytes',
      );
    const stored = await putBlob(c.env.TRANSCRIPTS, c.get('runnerSession'), body.value, sha.data);
    if (stored !== sha.data)
      return apiError(c, 400, 'invalid_request', `sha256: the body's sha256 is ${stored}`, 'sha256');
    return c.json({ sha256: stored, size: body.value.byteLength }, 201);
  });

  // Many small blobs in one request (frames.ts), stored as one pack (packs.ts) whose index the
  // hub keeps; the answer lists each blob's sha256, computed here, in order, so the runner checks
  // them against what it hashed.
  app.post('/blobs', async (c) => {
    const { settings } = await readSettings(c.env.DB);
    const max = settings.workspaceMaxFileBytes;
    const body = await readBody(c.req.raw, BATCH_MAX_BYTES);
    if (!body.ok) return apiError(c, 413, 'payload_too_large', `a batch may hold at most ${BATCH_MAX_BYTES} bytes`);
    const parts = decodeFrames(new Uint8Array(body.value));
    if (parts === null)
      return apiError(c, 400, 'invalid_request', 'body: not a sequence of length-prefixed blobs', 'body');
    if (parts.length > BATCH_MAX_BLOBS)
      return apiError(c, 413, 'payload_too_large', `a batch may hold at most ${BATCH_MAX_BLOBS} blobs`);
    if (parts.some((p) => p.length > max))
      return apiError(
        c,
        413,
        'payload_too_large',
        `maxFileBytes: a file may hold at most ${max} bytes`,
        'maxFileBytes',
      );
    const session = c.get('runnerSession');
    const { pack, blobs } = await putPack(c.env.TRANSCRIPTS, session, parts);
    await hubFor(c.env, session).workspaceBlobsPacked(pack, blobs);
    return c.json({ sha256: blobs.map((b) => b.sha256) }, 201);
  });

  for (const [path, max] of [
    ['/blobs/get', BLOBS_GET_MAX_BODY],
    ['/commit', COMMIT_MAX_BODY],
  ] as const)
    app.on(
      'POST',
      path,
      limitBody(max, (c) => apiError(c, 413, 'payload_too_large', `the body exceeds ${max} bytes`)),
    );

  app.post('/blobs/get', async (c) => {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch {
      return apiError(c, 400, 'invalid_json', 'body is not JSON');
    }
    const parsed = z.object({ sha256: z.array(Sha256Schema).max(BATCH_MAX_BLOBS) }).safeParse(raw);
    if (!parsed.success) return apiError(c, 400, 'invalid_request', 'sha256: a list of sha256 names', 'sha256');
    const session = c.get('runnerSession');
    const shas = parsed.data.sha256;
    const located = await hubFor(c.env, session).workspaceBlobLocations(shas);
    const got = await readBlobs(c.env.TRANSCRIPTS, session, shas, located, BATCH_MAX_BYTES);
    if (got === 'too_large')
      return apiError(c, 413, 'payload_too_large', `a batch may hold at most ${BATCH_MAX_BYTES} bytes`);
    const missing = shas.filter((_, i) => got[i] === null);
    if (missing.length > 0) return apiError(c, 404, 'not_found', `no such blob: ${missing[0]}`);
    return new Response(encodeFrames(got as Uint8Array[]), { headers: { 'Content-Type': 'application/octet-stream' } });
  });

  app.post('/commit', async (c) => {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch {
      return apiError(c, 400, 'invalid_json', 'body is not JSON');
    }
    const parsed = WorkspaceCommitSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') ?? '';
      return apiError(c, 400, 'invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, field);
    }
    const sessionId = c.get('runnerSession');
    // Packed blobs are known to the hub's index; only the others are looked up in R2.
    const hub = hubFor(c.env, sessionId);
    const all = [...new Set(parsed.data.upserts.map((u) => u.sha256))];
    const packed = all.length === 0 ? new Map<string, BlobLocation>() : await hub.workspaceBlobLocations(all);
    const shas = all.filter((s) => !packed.has(s));
    const looseSizes = await Promise.all(shas.map((s) => looseBlobSize(c.env.TRANSCRIPTS, sessionId, s)));
    const missing = shas.filter((_, i) => looseSizes[i] === null);
    if (missing.length > 0)
      return apiError(
        c,
        400,
        'invalid_request',
        `upserts: ${missing.length} blob(s) not uploaded, e.g. ${missing[0]}`,
        'upserts',
      );
    // The limits count the sizes the manifest holds, and a download announces them: each must be
    // its blob's own, never what the runner says.
    const sizeOf = new Map<string, number>(shas.map((s, i) => [s, looseSizes[i] ?? 0]));
    for (const [s, at] of packed) sizeOf.set(s, at.size);
    const wrong = parsed.data.upserts.findIndex((u) => sizeOf.get(u.sha256) !== u.size);
    if (wrong !== -1) {
      const u = parsed.data.upserts[wrong];
      return apiError(
        c,
        400,
        'invalid_request',
        `upserts.${wrong}.size: ${u?.path} is ${sizeOf.get(u?.sha256 ?? '')} bytes, not ${u?.size}`,
        `upserts.${wrong}.size`,
      );
    }
    const { settings } = await readSettings(c.env.DB);
    const r = await hub.workspaceCommit(
      parsed.data,
      { kind: 'runner', ...c.get('runnerLaunch') },
      workspaceLimitsOf(settings),
    );
    if (!r.ok) return apiError(c, r.status, r.code, r.message, r.field);
    return c.json(r.value, 200);
  });
  return app;
}
