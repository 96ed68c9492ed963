import { env } from 'cloudflare:workers';
import type { WorkspaceBaseline } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import { ORIGIN } from './helpers.ts';
import { createSession, hubContext, hubStub, launchAndConnect, type HubTestContext } from './hub-helpers.ts';

// The workspace baseline (the runner's clone commit) and the diff against it, in workerd with
// real R2, D1 and the hub.

afterEach(() => setHubRuntimeForTests({}));

const RUNNER_BASE = '/internal/runner/workspace';
const BASELINE: WorkspaceBaseline = {
  url: 'https://git.example.test/acme/widgets.git',
  ref: 'main',
  commit: 'a'.repeat(40),
};

async function req(
  ctx: HubTestContext,
  method: string,
  path: string,
  opts: { token?: string; body?: Uint8Array | string } = {},
): Promise<Response> {
  const headers = new Headers();
  if (opts.token !== undefined) headers.set('Authorization', `Bearer ${opts.token}`);
  const init: RequestInit = { method, headers };
  if (opts.body !== undefined) init.body = opts.body;
  return ctx.app.request(`${ORIGIN}${path}`, init, env);
}

async function sha256(data: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', data))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');
}

type RunnerFile = { path: string; content: string | Uint8Array; executable?: boolean };

/** A welcomed runner's credential: what the runner's workspace routes take as bearer. */
async function runnerCredential(ctx: HubTestContext, sessionId: string): Promise<string> {
  const { runner } = await launchAndConnect(ctx, sessionId);
  const credential = runner.of('welcome')[0]?.runnerToken;
  if (credential === undefined) throw new Error('no credential in the welcome');
  return credential;
}

/** Uploads the files' blobs and commits them (and the deletes) as the runner would. */
async function runnerCommit(
  ctx: HubTestContext,
  credential: string,
  files: RunnerFile[],
  extra: { deletes?: string[]; baseline?: WorkspaceBaseline } = {},
): Promise<Response> {
  const upserts = [];
  for (const f of files) {
    const bytes = typeof f.content === 'string' ? new TextEncoder().encode(f.content) : f.content;
    const sha = await sha256(bytes);
    const put = await req(ctx, 'PUT', `${RUNNER_BASE}/blobs/${sha}`, { token: credential, body: bytes });
    expect(put.status).toBe(201);
    upserts.push({ path: f.path, sha256: sha, size: bytes.length, executable: f.executable ?? false, modifiedAt: 1 });
  }
  return req(ctx, 'POST', `${RUNNER_BASE}/commit`, {
    token: credential,
    body: JSON.stringify({
      upserts,
      deletes: extra.deletes ?? [],
      ...(extra.baseline && { baseline: extra.baseline }),
    }),
  });
}

describe('workspace baseline', () => {
  it('is recorded from the runner’s clone commit, once; a second one is 409 baseline_exists', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const credential = await runnerCredential(ctx, id);
    expect(await hubStub(id).workspaceBaseline()).toBeNull();

    const clone = await runnerCommit(ctx, credential, [{ path: 'README.md', content: 'hello\n' }], {
      baseline: BASELINE,
    });
    expect(clone.status).toBe(200);
    expect(await hubStub(id).workspaceBaseline()).toEqual(BASELINE);

    const again = await runnerCommit(ctx, credential, [{ path: 'other.txt', content: 'x' }], {
      baseline: { ...BASELINE, commit: 'b'.repeat(40) },
    });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: 'baseline_exists', field: 'baseline' } });
    // Refused whole: the other file was not committed either, and the baseline is the first one.
    const list = await req(ctx, 'GET', `/api/sessions/${id}/files`, { token: ctx.token });
    expect(((await list.json()) as { files: { path: string }[] }).files.map((f) => f.path)).toEqual(['README.md']);
    expect(await hubStub(id).workspaceBaseline()).toEqual(BASELINE);

    // Later commits without one leave it as it was.
    expect((await runnerCommit(ctx, credential, [{ path: 'README.md', content: 'changed\n' }])).status).toBe(200);
    expect(await hubStub(id).workspaceBaseline()).toEqual(BASELINE);
  });
});
