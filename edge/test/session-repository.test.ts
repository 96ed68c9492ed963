import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { setHubRuntimeForTests } from '../src/hub/runtime.ts';
import type { Session } from '../src/sessions/schemas.ts';
import { adminWithToken, call, expectError, ORIGIN, type CallResult } from './helpers.ts';
import {
  FakeRunner,
  hubContext,
  hubStub,
  launchAndConnect,
  postMessage,
  SseReader,
  type HubTestContext,
  until,
  type SessionDetail,
  type SessionPage,
  type AdminSessionPage,
  type ErrorResponse,
} from './hub-helpers.ts';

// Sessions started from a repository (docs/DESIGN.md "Start from a repository"), in workerd with
// real D1 and the hub: what POST /api/sessions accepts and stores, which hosts it refuses, and what
// the runner's welcome carries until the clone is committed as the baseline.

afterEach(() => setHubRuntimeForTests({}));

const REPO = { url: 'https://git.example.org/acme/widgets.git', ref: 'v1' };

// What the routes answer (edge/src/sessions/schemas.ts, edge/src/errors.ts).

/** `B`: the session by default; a test that expects a refusal says so. */
async function create<B = Session>(ctx: HubTestContext, body: unknown, extra: { env?: Partial<Env> } = {}) {
  return call<B>(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body, ...extra });
}

/** A 400 whose error names `field`; returns the error. */
function refused(r: CallResult, field: string) {
  const err = expectError(r, 400, 'invalid_request');
  expect(err.field, r.text).toBe(field);
  return err;
}

async function setHosts(ctx: HubTestContext, repositoryHosts: string[]) {
  const admin = await adminWithToken(ctx.clock);
  const r = await call(ctx.app, 'PUT', '/api/admin/settings', { token: admin.token, body: { repositoryHosts } });
  expect(r.status, r.text).toBe(200);
  return admin;
}

describe('POST /api/sessions with a repository', () => {
  it('stores it and returns it on the session (create, detail, list, admin list); none is null', async () => {
    const ctx = await hubContext();
    const made = await create(ctx, { repository: REPO });
    expect(made.status, made.text).toBe(201);
    expect(made.body.repository).toEqual(REPO);
    const id = made.body.id;
    expect(
      (await call<SessionDetail>(ctx.app, 'GET', `/api/sessions/${id}`, { token: ctx.token })).body.repository,
    ).toEqual(REPO);
    const list = await call<SessionPage>(ctx.app, 'GET', '/api/sessions', { token: ctx.token });
    expect(list.body.sessions.find((s) => s.id === id)?.repository).toEqual(REPO);
    const admin = await adminWithToken(ctx.clock);
    const all = await call<AdminSessionPage>(ctx.app, 'GET', '/api/admin/sessions?state=all', { token: admin.token });
    expect(all.body.sessions.find((s) => s.id === id)?.repository).toEqual(REPO);

    const noRef = await create(ctx, { repository: { url: REPO.url } });
    expect(noRef.body.repository).toEqual({ url: REPO.url });
    expect((await create(ctx, {})).body.repository).toBeNull();
  });

  it('400 naming the field for URL and ref shapes the contract refuses', async () => {
    const ctx = await hubContext();
    for (const url of [
      'git@example.org:acme/widgets.git',
      'ssh://example.org/widgets.git',
      'file:///etc/passwd',
      'https://user:secret@example.org/widgets.git',
      'https://example.org/widgets.git#main',
      'widgets',
      // Host example.org to the URL standard, 10.0.0.1 to git's libcurl.
      'http://example.org\\@10.0.0.1/widgets.git',
    ]) {
      const r = await create<ErrorResponse | null>(ctx, { repository: { url } });
      expect({ url, status: r.status, field: r.body?.error?.field }).toEqual({
        url,
        status: 400,
        field: 'repository.url',
      });
    }
    for (const ref of ['--upload-pack=touch x', 'a..b', 'HEAD~1', ''])
      refused(await create(ctx, { repository: { url: REPO.url, ref } }), 'repository.ref');
    expectError(await create(ctx, { repository: { url: REPO.url, depth: 3 } }), 400, 'invalid_request');
  });

  it('400 naming repository.url for loopback, private and link-local hosts, and hosts the allow-list leaves out', async () => {
    const ctx = await hubContext();
    for (const url of [
      'http://127.0.0.1:9418/r.git',
      'http://localhost/r.git',
      'http://[::1]/r.git',
      'http://10.0.0.8/r.git',
      'http://192.168.1.10/r.git',
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::1]/r.git',
      'http://[fd00::5]/r.git',
    ]) {
      const r = refused(await create(ctx, { repository: { url } }), 'repository.url');
      expect(r.message).toMatch(/loopback|private, link-local/);
    }
    // A loopback address in another spelling reads as what it is, in the form that is checked.
    expect(
      refused(await create(ctx, { repository: { url: 'http://2130706433/r.git' } }), 'repository.url').message,
    ).toBe('repository.url: must be written as http://127.0.0.1/r.git');
    // Loopback only where the deployment turns it on (the local stack); private stays refused.
    const local = { env: { REPOSITORY_ALLOW_LOOPBACK: '1' } };
    expect((await create(ctx, { repository: { url: 'http://127.0.0.1:9418/r.git' } }, local)).status).toBe(201);
    refused(await create(ctx, { repository: { url: 'http://10.0.0.8/r.git' } }, local), 'repository.url');

    const admin = await setHosts(ctx, ['*.example.org', 'git.example.net']);
    try {
      expect((await create(ctx, { repository: { url: 'https://a.example.org/r.git' } })).status).toBe(201);
      expect((await create(ctx, { repository: { url: 'https://git.example.net/r.git' } })).status).toBe(201);
      for (const url of ['https://example.org/r.git', 'https://git.example.com/r.git', 'https://x.git.example.net/r']) {
        const r = refused(await create(ctx, { repository: { url } }), 'repository.url');
        expect(r.message).toMatch(/not an allowed repository host \(settings repositoryHosts\)/);
      }
      const off = await call(ctx.app, 'PUT', '/api/admin/settings', {
        token: admin.token,
        body: { repositoryHosts: [] },
      });
      expect(off.status).toBe(200);
      expect(refused(await create(ctx, { repository: REPO }), 'repository.url').message).toMatch(/turned off/);
      // A session without a repository is not affected.
      expect((await create(ctx, {})).status).toBe(201);
      refused(
        await call(ctx.app, 'PUT', '/api/admin/settings', {
          token: admin.token,
          body: { repositoryHosts: ['Git.Example.org'] },
        }),
        'repositoryHosts.0',
      );
    } finally {
      await setHosts(ctx, ['*']);
    }
  });
});

describe('welcome.repository', () => {
  it('tells every runner to clone until the clone is committed as the baseline, then none; the launch carries no loopback switch by default', async () => {
    const ctx = await hubContext();
    const made = await create(ctx, { repository: REPO });
    const id = made.body.id;
    const first = await launchAndConnect(ctx, id);
    const welcome = first.runner.of('welcome')[0];
    expect(welcome?.repository).toEqual(REPO);
    // The deployment's config has no REPOSITORY_ALLOW_LOOPBACK: the launch does not carry the switch.
    expect(first.launch.repositoryAllowLoopback).toBeUndefined();

    // A runner that reconnects before the clone is committed is told again.
    const credential = welcome?.runnerToken as string;
    const commit = (baseline?: object) =>
      ctx.app.request(
        `${ORIGIN}/internal/runner/workspace/commit`,
        {
          method: 'POST',
          headers: { Authorization: `Bearer ${credential}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ upserts: [], deletes: [], ...(baseline && { baseline }) }),
        },
        env,
      );
    expect((await commit()).status).toBe(200);
    first.runner.close();
    const again = await FakeRunner.connect(ctx.app, {
      token: credential,
      sessionId: id,
      runnerId: first.runner.runnerId,
    });
    again.hello(id, { lastSeq: 0 });
    expect((await again.waitFor('welcome')).repository).toEqual(REPO);

    // The clone's commit: from now on runners restore instead.
    expect((await commit({ ...REPO, commit: 'c'.repeat(40) })).status).toBe(200);
    again.close();
    const third = await FakeRunner.connect(ctx.app, {
      token: credential,
      sessionId: id,
      runnerId: first.runner.runnerId,
    });
    third.hello(id, { lastSeq: 0 });
    expect((await third.waitFor('welcome')).repository).toBeUndefined();
    third.close();
  });

  it('is absent for a session without a repository', async () => {
    const ctx = await hubContext();
    const id = (await create(ctx, {})).body.id;
    const { runner } = await launchAndConnect(ctx, id);
    expect(runner.of('welcome')[0]?.repository).toBeUndefined();
    runner.close();
  });
});

/**
 * Rewrites the repository stored in the session's hub record, as a session stored before a rule
 * of the contract tightened would hold it (the hub keeps it in memory too, so both are changed).
 */
async function storeRepository(sessionId: string, repository: unknown): Promise<void> {
  await runInDurableObject(hubStub(sessionId), (instance, state) => {
    const hub: unknown = Reflect.get(instance, 'hub');
    const meta: unknown = typeof hub === 'object' && hub !== null ? Reflect.get(hub, 'meta') : undefined;
    const session: unknown = typeof meta === 'object' && meta !== null ? Reflect.get(meta, 'session') : undefined;
    if (typeof session !== 'object' || session === null) throw new Error('no session in the hub');
    Reflect.set(session, 'repository', repository);
    state.storage.sql.exec("UPDATE meta SET v = ? WHERE k = 'hub'", JSON.stringify(meta));
  });
}

/** The turn's error event and its turn.done, from the session's stream. */
async function startRefused(ctx: HubTestContext, id: string) {
  const sse = await SseReader.open(ctx, id);
  const done = await sse.waitFor('turn.done', (e) => e.event === 'turn.done');
  const error = sse.ofType('error')[0];
  await sse.close();
  return { done: done.data as { stopReason: string; error?: { code: string; message: string } }, error };
}

describe('a stored repository the contract no longer accepts', () => {
  // A ref that reads as an option: the contract refuses it (see protocol/src/workspace/repository.ts).
  const BAD = { url: REPO.url, ref: '--upload-pack=touch /tmp/x' };

  it('ends the start with repository_clone_failed naming repository.ref; no runner is launched', async () => {
    const ctx = await hubContext();
    const id = (await create(ctx, { repository: REPO })).body.id;
    await storeRepository(id, BAD);
    const r = await postMessage(ctx, id, 'hello');
    expect(r.status, r.text).toBe(202);
    const { done, error } = await startRefused(ctx, id);
    expect(done.stopReason).toBe('error');
    expect(done.error?.code).toBe('repository_clone_failed');
    expect(done.error?.message).toMatch(/^repository\.ref: the session's stored repository no longer passes/);
    expect(error?.data).toMatchObject({ code: 'repository_clone_failed', retryable: false });
    expect(ctx.launcher.startsFor(id)).toEqual([]);
    // The refused start gives back the runner slot its message claimed.
    await until('the runner slot given back', async () => {
      const row = await env.DB.prepare('SELECT count(*) AS n FROM runner_slots WHERE session_id = ?')
        .bind(id)
        .first<{ n: number }>();
      return row?.n === 0;
    });
  });

  it('a runner already launched is refused at its welcome and the turn ends with the same error', async () => {
    const ctx = await hubContext();
    const id = (await create(ctx, { repository: REPO })).body.id;
    expect((await postMessage(ctx, id, 'hello')).status).toBe(202);
    const launch = await until('a launch', () => ctx.launcher.startsFor(id).at(-1));
    await storeRepository(id, BAD);
    const runner = await FakeRunner.connect(ctx.app, { token: launch.runnerToken, sessionId: id });
    runner.hello(id);
    await runner.waitClosed();
    expect(runner.of('welcome')).toEqual([]);
    const { done } = await startRefused(ctx, id);
    expect(done.error?.code).toBe('repository_clone_failed');
    expect(done.error?.message).toMatch(/^repository\.ref: /);
  });
});
