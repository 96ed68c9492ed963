import { env } from 'cloudflare:workers';
import { decodeFrames, encodeFrames, type WorkspaceManifest } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import type { z } from 'zod';
import type { WorkspaceResult } from '../src/workspace/hub-workspace.ts';
import type { WorkspaceListSchema } from '../src/workspace/openapi.ts';
import { adminWithToken, expectError, ORIGIN, userWithToken } from './helpers.ts';
import { call, createSession, hubContext, launchAndConnect, until, setSettings } from './hub-helpers.ts';
import { req, sha256 } from './workspace-helpers.ts';

type FileList = z.infer<typeof WorkspaceListSchema>;

// The Files API and the runner's workspace routes, in workerd with real R2, D1 and the hub.

afterEach(() => setHubRuntimeForTests({}));

/** Parses an uncompressed tar: name (pax path when present) → content. */
function untar(bytes: Uint8Array): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const text = new TextDecoder();
  let at = 0;
  let paxPath: string | undefined;
  while (at + 512 <= bytes.length) {
    const h = bytes.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const name = text.decode(h.subarray(0, 100)).replace(/\0.*$/s, '');
    const size = Number.parseInt(text.decode(h.subarray(124, 136)).replace(/\0.*$/s, ''), 8);
    const type = String.fromCharCode(h[156] ?? 0);
    const body = bytes.subarray(at + 512, at + 512 + size);
    if (type === 'x') paxPath = /\d+ path=(.*)\n/s.exec(text.decode(body))?.[1];
    else {
      out.set(paxPath ?? name, body.slice());
      paxPath = undefined;
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe('Files API', () => {
  it('puts, lists, gets byte-identical as an attachment, archives and deletes with no runner live', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const bytes = new Uint8Array(3000).map((_, i) => (i * 7) % 256);
    const put = await req(ctx, 'PUT', `/api/sessions/${id}/files/data/blob.bin`, { token: ctx.token, body: bytes });
    expect(put.status).toBe(201);
    expect(await put.json()).toEqual({ path: 'data/blob.bin', size: 3000, sha256: await sha256(bytes) });
    const page = '<script>alert(1)</script>';
    expect(
      (await req(ctx, 'PUT', `/api/sessions/${id}/files/index.html`, { token: ctx.token, body: page })).status,
    ).toBe(201);
    const name = 'dir/ünï côde.txt';
    const enc = name.split('/').map(encodeURIComponent).join('/');
    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/${enc}`, { token: ctx.token, body: 'hi' })).status).toBe(
      201,
    );

    const list = await call<FileList>(ctx.app, 'GET', `/api/sessions/${id}/files`, { token: ctx.token });
    expect(list.status).toBe(200);
    expect(list.body.files.map((f) => f.path)).toEqual(['data/blob.bin', name, 'index.html']);
    expect(list.body.totalBytes).toBe(3000 + page.length + 2);

    const got = await req(ctx, 'GET', `/api/sessions/${id}/files/data/blob.bin`, { token: ctx.token });
    expect(got.status).toBe(200);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes);
    expect(got.headers.get('Content-Disposition')).toMatch(/^attachment; filename="blob.bin"/);
    const html = await req(ctx, 'GET', `/api/sessions/${id}/files/index.html`, { token: ctx.token });
    // Never rendered as a page from our origin.
    expect(html.headers.get('Content-Type')).toMatch(/^text\/plain/);
    expect(html.headers.get('Content-Disposition')).toMatch(/^attachment/);
    expect(html.headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(await html.text()).toBe(page);

    const archive = await req(ctx, 'GET', `/api/sessions/${id}/archive`, { token: ctx.token });
    expect(archive.status).toBe(200);
    expect(archive.headers.get('Content-Disposition')).toContain('.tar.gz');
    const tar = new Uint8Array(
      await new Response(archive.body?.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer(),
    );
    const entries = untar(tar);
    expect([...entries.keys()].sort()).toEqual(['data/blob.bin', name, 'index.html']);
    expect(entries.get('data/blob.bin')).toEqual(bytes);
    expect(new TextDecoder().decode(entries.get(name))).toBe('hi');

    expect((await req(ctx, 'DELETE', `/api/sessions/${id}/files/index.html`, { token: ctx.token })).status).toBe(204);
    expect((await req(ctx, 'GET', `/api/sessions/${id}/files/index.html`, { token: ctx.token })).status).toBe(404);
    expect((await req(ctx, 'DELETE', `/api/sessions/${id}/files/index.html`, { token: ctx.token })).status).toBe(404);
  });

  it('answers every bad path with 400 naming path, and a file/folder clash with 409', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    for (const bad of [
      '..%2Fescape',
      'a%2F..%2F..%2Fx',
      '.%2Fx',
      '%2Fetc%2Fpasswd',
      'a//b',
      'a%00b',
      'a%0Ab',
      'a%5C..%5Cb',
      'dir/',
      '%E0%A4%A',
    ]) {
      for (const method of ['PUT', 'GET', 'DELETE']) {
        const r = await req(ctx, method, `/api/sessions/${id}/files/${bad}`, {
          token: ctx.token,
          ...(method === 'PUT' && { body: 'x' }),
        });
        const body = (await r.json()) as { error: { field?: string } };
        expect({ bad, method, status: r.status, field: body.error.field }).toEqual({
          bad,
          method,
          status: 400,
          field: 'path',
        });
      }
    }
    // Dot segments the URL layer resolves before the Worker sees them land on another route.
    for (const bad of ['%2e%2e/%2e%2e/escape', '../../../escape']) {
      const r = await req(ctx, 'PUT', `/api/sessions/${id}/files/${bad}`, { token: ctx.token, body: 'x' });
      expect(r.status).toBe(404);
    }
    const deep = Array(40).fill('d').join('/');
    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/${deep}`, { token: ctx.token, body: 'x' })).status).toBe(
      400,
    );
    expect(
      (await req(ctx, 'PUT', `/api/sessions/${id}/files/${'n'.repeat(1100)}`, { token: ctx.token, body: 'x' })).status,
    ).toBe(400);
    // Nothing was stored by any of those.
    expect(
      (await call<FileList>(ctx.app, 'GET', `/api/sessions/${id}/files`, { token: ctx.token })).body.files,
    ).toEqual([]);

    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/a`, { token: ctx.token, body: 'x' })).status).toBe(201);
    const under = await req(ctx, 'PUT', `/api/sessions/${id}/files/a/b`, { token: ctx.token, body: 'x' });
    expect(under.status).toBe(409);
    expect(((await under.json()) as { error: { field: string } }).error.field).toBe('path');
    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/c/d`, { token: ctx.token, body: 'x' })).status).toBe(201);
    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/c`, { token: ctx.token, body: 'x' })).status).toBe(409);
  });

  it('refuses over each limit with 413 naming it, and stores nothing of the refused writes', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    await setSettings(ctx, { workspaceMaxFileBytes: 2048, workspaceMaxFiles: 2, workspaceMaxBytes: 3000 });
    try {
      const big = await req(ctx, 'PUT', `/api/sessions/${id}/files/big`, {
        token: ctx.token,
        body: new Uint8Array(2049),
      });
      expect(big.status).toBe(413);
      expect(await big.json()).toMatchObject({ error: { code: 'payload_too_large', field: 'maxFileBytes' } });
      expect(
        (await req(ctx, 'PUT', `/api/sessions/${id}/files/one`, { token: ctx.token, body: new Uint8Array(2000) }))
          .status,
      ).toBe(201);
      const bytes = await req(ctx, 'PUT', `/api/sessions/${id}/files/two`, {
        token: ctx.token,
        body: new Uint8Array(1500),
      });
      expect(bytes.status).toBe(413);
      expect(((await bytes.json()) as { error: { field: string } }).error.field).toBe('maxWorkspaceBytes');
      expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/two`, { token: ctx.token, body: 'x' })).status).toBe(
        201,
      );
      const files = await req(ctx, 'PUT', `/api/sessions/${id}/files/three`, { token: ctx.token, body: 'x' });
      expect(files.status).toBe(413);
      expect(((await files.json()) as { error: { field: string; message: string } }).error).toMatchObject({
        field: 'maxWorkspaceFiles',
      });
      const list = await call<FileList>(ctx.app, 'GET', `/api/sessions/${id}/files`, { token: ctx.token });
      expect(list.body.files.map((f) => f.path)).toEqual(['one', 'two']);
      // Refused again and again: the bucket holds the two files' contents and nothing of the rest.
      for (let i = 0; i < 5; i++)
        expect(
          (
            await req(ctx, 'PUT', `/api/sessions/${id}/files/more${i}`, {
              token: ctx.token,
              body: new Uint8Array(900).fill(i + 1),
            })
          ).status,
        ).toBe(413);
      const stored = await env.TRANSCRIPTS.list({ prefix: `sessions/${id}/workspace/` });
      expect(stored.objects.map((o) => o.key.split('/').at(-1)).sort()).toEqual(
        [await sha256(new Uint8Array(2000)), await sha256(new TextEncoder().encode('x'))].sort(),
      );
    } finally {
      await setSettings(ctx, {
        workspaceMaxFileBytes: 32 * 1024 * 1024,
        workspaceMaxFiles: 10_000,
        workspaceMaxBytes: 512 * 1024 * 1024,
      });
    }
  });

  it('another user gets 404 for everything; an admin reads (audited) but cannot write (403)', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    expect(
      (await req(ctx, 'PUT', `/api/sessions/${id}/files/secret.txt`, { token: ctx.token, body: 'mine' })).status,
    ).toBe(201);
    const other = await userWithToken(ctx.clock);
    for (const [method, path] of [
      ['GET', 'files'],
      ['GET', 'files/secret.txt'],
      ['PUT', 'files/secret.txt'],
      ['DELETE', 'files/secret.txt'],
      ['GET', 'archive'],
    ] as const) {
      const r = await req(ctx, method, `/api/sessions/${id}/${path}`, {
        token: other.token,
        ...(method === 'PUT' && { body: 'theirs' }),
      });
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 404 });
    }
    const admin = await adminWithToken(ctx.clock);
    const read = await req(ctx, 'GET', `/api/sessions/${id}/files/secret.txt`, { token: admin.token });
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('mine');
    const audit = await env.DB.prepare('SELECT action, target FROM audit_log WHERE actor_id = ? AND target = ?')
      .bind(admin.user.id, `session:${id}`)
      .all();
    expect(audit.results).toContainEqual({ action: 'session.read', target: `session:${id}` });
    expectError(
      await call(ctx.app, 'PUT', `/api/sessions/${id}/files/secret.txt`, {
        token: admin.token,
        raw: 'x',
        contentType: 'application/octet-stream',
      }),
      403,
    );
    expectError(await call(ctx.app, 'DELETE', `/api/sessions/${id}/files/secret.txt`, { token: admin.token }), 403);
    expectError(await call(ctx.app, 'GET', `/api/sessions/${id}/files`), 401);
  });
});

describe('blob sweep', () => {
  it('every tenth commit deletes the blobs no file points at any more, and only those', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const put = (path: string, body: string) =>
      req(ctx, 'PUT', `/api/sessions/${id}/files/${path}`, { token: ctx.token, body });
    expect((await put('keep.txt', 'kept')).status).toBe(201);
    for (let v = 1; v <= 8; v++) expect((await put('v.txt', `version ${v}`)).status).toBe(201);
    const prefix = `sessions/${id}/workspace/blobs/`;
    // Nine commits so far: nothing swept; every version is still there.
    expect((await env.TRANSCRIPTS.list({ prefix })).objects).toHaveLength(9);
    // The injected clock is ahead of R2's upload times, so every orphan is old enough.
    expect((await put('v.txt', 'version 9')).status).toBe(201);
    await until('the sweep', async () => (await env.TRANSCRIPTS.list({ prefix })).objects.length === 2);
    expect(await (await req(ctx, 'GET', `/api/sessions/${id}/files/v.txt`, { token: ctx.token })).text()).toBe(
      'version 9',
    );
    expect(await (await req(ctx, 'GET', `/api/sessions/${id}/files/keep.txt`, { token: ctx.token })).text()).toBe(
      'kept',
    );
  });
});

describe('packs', () => {
  it('stores a batch as one R2 object, reads packed blobs everywhere, and sweeps a pack only once none of its blobs is in use', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, id);
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    const base = '/internal/runner/workspace';
    const enc = (s: string) => new TextEncoder().encode(s);
    const upload = async (parts: Uint8Array[]) => {
      const r = await req(ctx, 'POST', `${base}/blobs`, { token: credential, body: encodeFrames(parts) });
      expect(r.status).toBe(201);
      return ((await r.json()) as { sha256: string[] }).sha256;
    };
    const [alpha, beta] = await upload([enc('alpha'), enc('beta')]);
    const [gamma] = await upload([enc('gamma')]);
    const packs = `sessions/${id}/workspace/packs/`;
    expect((await env.TRANSCRIPTS.list({ prefix: packs })).objects).toHaveLength(2);
    expect((await env.TRANSCRIPTS.list({ prefix: `sessions/${id}/workspace/blobs/` })).objects).toEqual([]);
    const entry = (path: string, sha: string | undefined, size: number) => ({
      path,
      sha256: sha,
      size,
      executable: false,
      modifiedAt: 1,
    });
    const commit = (body: unknown) =>
      req(ctx, 'POST', `${base}/commit`, { token: credential, body: JSON.stringify(body) });
    const first = await commit({
      upserts: [entry('a.txt', alpha, 5), entry('b.txt', beta, 4), entry('c.txt', gamma, 5)],
      deletes: [],
    });
    expect(first.status).toBe(200);

    const file = (path: string) => req(ctx, 'GET', `/api/sessions/${id}/files/${path}`, { token: ctx.token });
    expect(await (await file('b.txt')).text()).toBe('beta');
    const one = await req(ctx, 'GET', `${base}/blobs/${gamma}`, { token: credential });
    expect(new TextDecoder().decode(await one.arrayBuffer())).toBe('gamma');
    const archive = await req(ctx, 'GET', `/api/sessions/${id}/archive`, { token: ctx.token });
    const tar = untar(
      new Uint8Array(await new Response(archive.body?.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer()),
    );
    expect([...tar].map(([p, b]) => [p, new TextDecoder().decode(b)])).toEqual([
      ['a.txt', 'alpha'],
      ['b.txt', 'beta'],
      ['c.txt', 'gamma'],
    ]);

    // Blobs far apart in one pack are read each on its own; close ones together: same bytes back.
    const far = [enc('head'), new Uint8Array(100 * 1024).fill(7), enc('tail'), enc('next')];
    const [head, , tail, next] = await upload(far);
    const apart = await req(ctx, 'POST', `${base}/blobs/get`, {
      token: credential,
      body: JSON.stringify({ sha256: [tail, head, next, tail] }),
    });
    expect(decodeFrames(new Uint8Array(await apart.arrayBuffer()))).toEqual([far[2], far[0], far[3], far[2]]);

    // alpha and gamma are no longer in use: gamma's pack can go, alpha's holds beta too.
    expect((await commit({ upserts: [], deletes: ['a.txt', 'c.txt'] })).status).toBe(200);
    for (let g = 3; g <= 9; g++) expect((await commit({ upserts: [], deletes: [] })).status).toBe(200);
    expect((await env.TRANSCRIPTS.list({ prefix: packs })).objects).toHaveLength(3);
    // Past the sweep's minimum age for the rows the hub stamped with its clock (R2's own upload
    // times are already behind the injected clock).
    ctx.clock.advance(2 * 60 * 60_000);
    expect((await req(ctx, 'PUT', `/api/sessions/${id}/files/d.txt`, { token: ctx.token, body: 'd' })).status).toBe(
      201,
    );
    // Gamma's pack and the never-committed one go; alpha's stays for beta.
    await until('the pack sweep', async () => (await env.TRANSCRIPTS.list({ prefix: packs })).objects.length === 1);
    expect(await (await file('b.txt')).text()).toBe('beta');
    // The index forgot alpha (the runner's credential has expired with the clock: asked directly).
    const index = await env.SESSION_HUB.get(env.SESSION_HUB.idFromName(id)).workspaceBlobLocations([
      alpha ?? '',
      beta ?? '',
    ]);
    expect([...index.keys()]).toEqual([beta]);

    // Deleting the session takes its packs with it.
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${id}`, { token: ctx.token })).status).toBe(204);
    expect((await env.TRANSCRIPTS.list({ prefix: `sessions/${id}/workspace/` })).objects).toEqual([]);
  });
});

describe('runner workspace routes', () => {
  it("a runner that starts after an upload is welcomed with the workspace's generation, so it restores", async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    expect(
      (await req(ctx, 'PUT', `/api/sessions/${id}/files/notes.txt`, { token: ctx.token, body: 'hi' })).status,
    ).toBe(201);
    const { runner } = await launchAndConnect(ctx, id);
    expect(runner.of('welcome')[0]?.workspaceGeneration).toBe(1);
  });

  it('a welcomed runner uploads blobs and commits; the hub logs workspace.saved and tells it about user writes', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const { runner, launch } = await launchAndConnect(ctx, id);
    const welcome = runner.of('welcome')[0];
    const credential = welcome?.runnerToken ?? '';
    expect(credential).not.toBe('');
    // Nothing stored yet: the welcome says so, and the runner skips its restore.
    expect(welcome?.workspaceGeneration).toBe(0);
    const base = '/internal/runner/workspace';

    // The bootstrap token (the one in the launch request) is for dialling only.
    expect((await req(ctx, 'GET', `${base}/manifest`, { token: launch.runnerToken })).status).toBe(401);
    expect((await req(ctx, 'GET', `${base}/manifest`, { token: ctx.token })).status).toBe(401);

    const m0 = (await (await req(ctx, 'GET', `${base}/manifest`, { token: credential })).json()) as WorkspaceManifest;
    expect(m0).toMatchObject({ generation: 0, files: [] });

    const data = new TextEncoder().encode('written by the agent\n');
    const sha = await sha256(data);
    const lie = await req(ctx, 'PUT', `${base}/blobs/${'0'.repeat(64)}`, { token: credential, body: data });
    expect(lie.status).toBe(400);
    const commitBody = JSON.stringify({
      upserts: [{ path: 'out/result.txt', sha256: sha, size: data.length, executable: false, modifiedAt: 1 }],
      deletes: [],
    });
    const early = await req(ctx, 'POST', `${base}/commit`, { token: credential, body: commitBody });
    expect(early.status).toBe(400);
    expect((await req(ctx, 'PUT', `${base}/blobs/${sha}`, { token: credential, body: data })).status).toBe(201);
    const commit = await req(ctx, 'POST', `${base}/commit`, { token: credential, body: commitBody });
    expect(commit.status).toBe(200);
    expect(await commit.json()).toEqual({ generation: 1, files: 1, bytes: data.length });
    const outside = await req(ctx, 'POST', `${base}/commit`, {
      token: credential,
      body: JSON.stringify({ upserts: [], deletes: ['../../etc/passwd'] }),
    });
    expect(outside.status).toBe(400);

    const got = await req(ctx, 'GET', `/api/sessions/${id}/files/out/result.txt`, { token: ctx.token });
    expect(await got.text()).toBe('written by the agent\n');

    // Many small blobs in one request each way.
    const small = [new TextEncoder().encode('one'), new TextEncoder().encode('two'), new Uint8Array(0)];
    const batch = await req(ctx, 'POST', `${base}/blobs`, { token: credential, body: encodeFrames(small) });
    expect(batch.status).toBe(201);
    const names = ((await batch.json()) as { sha256: string[] }).sha256;
    expect(names).toEqual(await Promise.all(small.map((b) => sha256(b))));
    const back = await req(ctx, 'POST', `${base}/blobs/get`, {
      token: credential,
      body: JSON.stringify({ sha256: names }),
    });
    expect(back.status).toBe(200);
    expect(decodeFrames(new Uint8Array(await back.arrayBuffer()))).toEqual(small);
    const torn = await req(ctx, 'POST', `${base}/blobs`, {
      token: credential,
      body: encodeFrames(small).subarray(0, 5),
    });
    expect(torn.status).toBe(400);
    const unknown = await req(ctx, 'POST', `${base}/blobs/get`, {
      token: credential,
      body: JSON.stringify({ sha256: ['e'.repeat(64)] }),
    });
    expect(unknown.status).toBe(404);

    expect(
      (await req(ctx, 'PUT', `/api/sessions/${id}/files/in.txt`, { token: ctx.token, body: 'from a person' })).status,
    ).toBe(201);
    const sync = await runner.waitFor('workspace_sync');
    expect(sync.generation).toBe(2);

    const events = await call(ctx.app, 'GET', `/api/sessions/${id}/transcript`, { token: ctx.token });
    expect(events.status).toBe(200);
    const log: WorkspaceResult<WorkspaceManifest> = await env.SESSION_HUB.get(
      env.SESSION_HUB.idFromName(id),
    ).workspaceManifest({
      maxFileBytes: 1,
      maxWorkspaceBytes: 1,
      maxWorkspaceFiles: 1,
    });
    expect(log.ok && log.value.files.map((f) => f.path)).toEqual(['in.txt', 'out/result.txt']);

    // Deleting the session takes the blobs with it.
    expect((await call(ctx.app, 'DELETE', `/api/sessions/${id}`, { token: ctx.token })).status).toBe(204);
    const left = await env.TRANSCRIPTS.list({ prefix: `sessions/${id}/workspace/` });
    expect(left.objects).toEqual([]);
  });
});

describe('what a runner commits is checked against what it stored', () => {
  // A runner that lies (a compromised one) about a blob's size: the limits count the manifest's
  // sizes, so five 2 KiB blobs declared 0 bytes passed a 2 KiB workspace, and a download then
  // announced 0 bytes and carried 2,048.
  it('a size that is not the blob’s own is refused naming it, loose or packed; over-long bodies are 413', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, id);
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    const base = '/internal/runner/workspace';
    const big = new Uint8Array(2048).fill(7);
    const bigSha = await sha256(big);
    expect((await req(ctx, 'PUT', `${base}/blobs/${bigSha}`, { token: credential, body: big })).status).toBe(201);
    const small = new TextEncoder().encode('packed');
    const packedSha = await sha256(small);
    expect((await req(ctx, 'POST', `${base}/blobs`, { token: credential, body: encodeFrames([small]) })).status).toBe(
      201,
    );
    const commit = (upserts: Array<{ path: string; sha256: string; size: number }>) =>
      req(ctx, 'POST', `${base}/commit`, {
        token: credential,
        body: JSON.stringify({
          upserts: upserts.map((u) => ({ ...u, executable: false, modifiedAt: 1 })),
          deletes: [],
        }),
      });
    for (const [upserts, field] of [
      [[{ path: 'big.bin', sha256: bigSha, size: 0 }], 'upserts.0.size'],
      [
        [
          { path: 'big.bin', sha256: bigSha, size: big.length },
          { path: 'small.txt', sha256: packedSha, size: 1 },
        ],
        'upserts.1.size',
      ],
    ] as const) {
      const r = await commit([...upserts]);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { field: string } }).error.field).toBe(field);
    }
    const ok = await commit([
      { path: 'big.bin', sha256: bigSha, size: big.length },
      { path: 'small.txt', sha256: packedSha, size: small.length },
    ]);
    expect(await ok.json()).toEqual({ generation: 1, files: 2, bytes: big.length + small.length });

    const longGet = JSON.stringify({ sha256: [], pad: 'x'.repeat(70_000) });
    expect((await req(ctx, 'POST', `${base}/blobs/get`, { token: credential, body: longGet })).status).toBe(413);
  });
});

describe('GET /blobs/:sha for the runner', () => {
  it('a blob stored nowhere is 404 after one read of its own object; a packed one comes from its pack', async () => {
    const ctx = await hubContext();
    const id = await createSession(ctx);
    const { runner } = await launchAndConnect(ctx, id);
    const credential = runner.of('welcome')[0]?.runnerToken ?? '';
    const base = '/internal/runner/workspace';
    // The same bucket, with every read of a workspace object noted.
    const reads: string[] = [];
    const bucket = env.TRANSCRIPTS;
    const counted = new Proxy(bucket, {
      get(target, prop) {
        if (prop === 'get')
          return (...args: Parameters<R2Bucket['get']>) => {
            if (args[0].includes('/workspace/')) reads.push(args[0]);
            return target.get(...args);
          };
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const get = (sha: string) =>
      ctx.app.request(
        `${ORIGIN}${base}/blobs/${sha}`,
        { headers: { Authorization: `Bearer ${credential}` } },
        { ...env, TRANSCRIPTS: counted },
      );

    const missing = await get('e'.repeat(64));
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(reads).toEqual([`sessions/${id}/workspace/blobs/${'e'.repeat(64)}`]);

    const packed = await req(ctx, 'POST', `${base}/blobs`, {
      token: credential,
      body: encodeFrames([new TextEncoder().encode('in a pack')]),
    });
    const [sha = ''] = ((await packed.json()) as { sha256: string[] }).sha256;
    const files = [{ path: 'p.txt', sha256: sha, size: 9, executable: false, modifiedAt: 1 }];
    const commit = await req(ctx, 'POST', `${base}/commit`, {
      token: credential,
      body: JSON.stringify({ upserts: files, deletes: [] }),
    });
    expect(commit.status).toBe(200);
    reads.length = 0;
    const found = await get(sha);
    expect(found.status).toBe(200);
    expect(found.headers.get('content-length')).toBe('9');
    expect(await found.text()).toBe('in a pack');
    expect(reads).toHaveLength(2);
    expect(reads[0]).toBe(`sessions/${id}/workspace/blobs/${sha}`);
    expect(reads[1]).toMatch(new RegExp(`^sessions/${id}/workspace/packs/`));
  });
});
