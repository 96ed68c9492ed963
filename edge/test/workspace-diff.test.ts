import { env } from 'cloudflare:workers';
import { encodeFrames, type WorkspaceBaseline } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import type { WorkspaceResult } from '../src/workspace/hub-workspace.ts';
import { adminWithToken, userWithToken } from './helpers.ts';
import { createSession, hubContext, hubStub, launchAndConnect, type HubTestContext, until } from './hub-helpers.ts';
import { req, sha256 } from './workspace-helpers.ts';

// The workspace baseline (the runner's clone commit) and the diff against it, in workerd with
// real R2, D1 and the hub.

afterEach(() => setHubRuntimeForTests({}));

const RUNNER_BASE = '/internal/runner/workspace';
const BASELINE: WorkspaceBaseline = {
  url: 'https://git.example.test/acme/widgets.git',
  ref: 'main',
  commit: 'a'.repeat(40),
};

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
  extra: { deletes?: string[]; baseline?: WorkspaceBaseline; packed?: boolean } = {},
): Promise<Response> {
  const upserts = [];
  const all = files.map((f) => (typeof f.content === 'string' ? new TextEncoder().encode(f.content) : f.content));
  if (extra.packed === true) {
    // One batch: stored as one pack (packs.ts), as a runner's save stores small files.
    const batch = await req(ctx, 'POST', `${RUNNER_BASE}/blobs`, { token: credential, body: encodeFrames(all) });
    expect(batch.status).toBe(201);
  }
  for (const [i, f] of files.entries()) {
    const bytes = all[i] as Uint8Array;
    const sha = await sha256(bytes);
    if (extra.packed !== true) {
      const put = await req(ctx, 'PUT', `${RUNNER_BASE}/blobs/${sha}`, { token: credential, body: bytes });
      expect(put.status).toBe(201);
    }
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

  it('is never set by a person’s write, even on a session without one', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const limits = { maxFileBytes: 1 << 20, maxWorkspaceBytes: 1 << 24, maxWorkspaceFiles: 100 };
    const r: WorkspaceResult<unknown> = await hubStub(id).workspaceCommit(
      { upserts: [], deletes: [], baseline: BASELINE },
      { kind: 'user' },
      limits,
    );
    expect(r).toMatchObject({ ok: false, status: 409, field: 'baseline' });
    expect(await hubStub(id).workspaceBaseline()).toBeNull();
  });
});

async function diff(ctx: HubTestContext, id: string, query = '', token = ctx.token) {
  const r = await req(ctx, 'GET', `/api/sessions/${id}/diff${query}`, { token });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

const put = (ctx: HubTestContext, id: string, path: string, body: string | Uint8Array) =>
  req(ctx, 'PUT', `/api/sessions/${id}/files/${path}`, { token: ctx.token, body });

describe('GET /api/sessions/:id/diff', () => {
  it('with no repository, every file is added; served as text/x-diff with nosniff', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const empty = await diff(ctx, id);
    expect(empty.status).toBe(200);
    expect(empty.text).toBe('');
    expect((await put(ctx, id, 'notes/todo.md', 'one\ntwo\n')).status).toBe(201);
    const d = await diff(ctx, id);
    expect(d.status).toBe(200);
    expect(d.headers.get('Content-Type')).toBe('text/x-diff; charset=utf-8');
    expect(d.headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(d.text).toBe(
      'diff --git a/notes/todo.md b/notes/todo.md\nnew file mode 100644\n--- /dev/null\n+++ b/notes/todo.md\n@@ -0,0 +1,2 @@\n+one\n+two\n',
    );
  });

  it('against the clone’s baseline (packed blobs): modified, added, deleted, mode, binary; .git/ left out; ?path= limits it', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const credential = await runnerCredential(ctx, id);
    const clone = await runnerCommit(
      ctx,
      credential,
      [
        { path: 'README.md', content: 'title\n\nbody\n' },
        { path: 'old.txt', content: 'remove me\n' },
        { path: 'run.sh', content: 'echo hi\n' },
        { path: 'logo.png', content: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1]) },
        { path: '.git/HEAD', content: 'ref: refs/heads/main\n' },
      ],
      { baseline: BASELINE, packed: true },
    );
    expect(clone.status).toBe(200);
    expect((await diff(ctx, id)).text).toBe('');

    // The agent's turn, then a person's upload.
    const turn = await runnerCommit(
      ctx,
      credential,
      [
        { path: 'README.md', content: 'title\n\nbetter body\n' },
        { path: 'run.sh', content: 'echo hi\n', executable: true },
        { path: 'logo.png', content: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 2]) },
        { path: '.git/HEAD', content: 'ref: refs/heads/other\n' },
      ],
      { deletes: ['old.txt'], packed: true },
    );
    expect(turn.status).toBe(200);
    expect((await put(ctx, id, 'src/new.ts', 'export {};\n')).status).toBe(201);

    const d = await diff(ctx, id);
    expect(d.status).toBe(200);
    expect(d.text).toBe(
      [
        'diff --git a/README.md b/README.md',
        '--- a/README.md',
        '+++ b/README.md',
        '@@ -1,3 +1,3 @@',
        ' title',
        ' ',
        '-body',
        '+better body',
        'diff --git a/logo.png b/logo.png',
        'Binary files a/logo.png and b/logo.png differ',
        'diff --git a/old.txt b/old.txt',
        'deleted file mode 100644',
        '--- a/old.txt',
        '+++ /dev/null',
        '@@ -1,1 +0,0 @@',
        '-remove me',
        'diff --git a/run.sh b/run.sh',
        'old mode 100644',
        'new mode 100755',
        'diff --git a/src/new.ts b/src/new.ts',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/src/new.ts',
        '@@ -0,0 +1,1 @@',
        '+export {};',
        '',
      ].join('\n'),
    );
    const one = await diff(ctx, id, '?path=old.txt');
    expect(one.text.match(/^diff --git .*$/gm)).toEqual(['diff --git a/old.txt b/old.txt']);
    const bad = await diff(ctx, id, `?path=${encodeURIComponent('../x')}`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ error: { code: 'invalid_request', field: 'path' } });
  });

  it('the sweep keeps the baseline’s blobs after the workspace stopped pointing at them', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const credential = await runnerCredential(ctx, id);
    const clone = await runnerCommit(ctx, credential, [{ path: 'a.txt', content: 'as cloned\n' }], {
      baseline: BASELINE,
    });
    expect(clone.status).toBe(200);
    // Nine more commits: the tenth sweeps (the injected clock is ahead of R2's upload times).
    for (let v = 1; v <= 9; v++) expect((await put(ctx, id, 'a.txt', `version ${v}\n`)).status).toBe(201);
    const prefix = `sessions/${id}/workspace/`;
    await until('the sweep', async () => (await env.TRANSCRIPTS.list({ prefix })).objects.length === 2);
    const d = await diff(ctx, id);
    expect(d.status).toBe(200);
    expect(d.text).toContain('-as cloned\n+version 9\n');
  });

  it('another user gets 404; an admin reads it, audited; no credential is 401', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    expect((await put(ctx, id, 'secret.txt', 'mine\n')).status).toBe(201);
    const other = await userWithToken(ctx.clock);
    const theirs = await diff(ctx, id, '', other.token);
    expect(theirs.status).toBe(404);
    expect(theirs.text).not.toContain('mine');
    const admin = await adminWithToken(ctx.clock);
    const read = await diff(ctx, id, '', admin.token);
    expect(read.status).toBe(200);
    expect(read.text).toContain('+mine');
    const audit = await env.DB.prepare('SELECT action, after FROM audit_log WHERE actor_id = ? AND target = ?')
      .bind(admin.user.id, `session:${id}`)
      .all<{ action: string; after: string }>();
    expect(audit.results.map((r) => [r.action, JSON.parse(r.after).route])).toContainEqual(['session.read', '/diff']);
    expect((await req(ctx, 'GET', `/api/sessions/${id}/diff`)).status).toBe(401);
  });
});
