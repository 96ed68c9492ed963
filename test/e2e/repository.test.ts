// Start from a repository, end to end through HTTP with the real claude and pi CLIs on the offline
// model (docs/DESIGN.md "Start from a repository"): a loopback git server (git http-backend) serves a
// bare repository; a session created from it has the repository's files (and its .git) in the
// workspace before the first turn, a ref checks out that ref, a clone that cannot happen ends the
// turn with repository_clone_failed, the Files API lists the clone, the diff shows exactly the
// agent's edit, and after a SIGKILL the next runner restores instead of cloning again. Hosts the
// settings leave out and malformed URLs are 400 naming the field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type Stack } from '../../scripts/start.ts';
import { E2eHarness, liveTask, sendMessage, listing, offline, toolOutput, turnSaved } from '../helpers/e2e-harness.ts';
import { startGitServer, type GitServer } from '../helpers/git-server.ts';
import { type Api, until, type SseStream } from '../helpers/sse-client.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

const h = new E2eHarness();
const { dumpOnFail } = h;
let stack: Stack;
let admin: Api;
let git: GitServer;

beforeAll(async () => {
  git = await startGitServer();
  ({ stack, admin } = await h.start('repository'));
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await h.stop();
  await git?.stop();
}, 120_000);

async function session(repository: { url: string; ref?: string }): Promise<{ id: string; sse: SseStream }> {
  const r = await admin.call<{ id: string; repository: unknown }>('POST', '/api/sessions', { repository });
  expect(r.status, r.text).toBe(201);
  expect(r.body.repository).toEqual(repository);
  const sse = await admin.events(r.body.id);
  h.streams.add(sse);
  return { id: r.body.id, sse };
}

/** Closes the stream and deletes the session, so its runner stops (each user has at most 5 live). */
async function finish(id: string, sse: SseStream): Promise<void> {
  await sse.close();
  h.streams.delete(sse);
  expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
}

/** A turn that ends with the clone's error: the turn.done carries it, and an error event says it too. */
async function cloneFails(
  repository: { url: string; ref?: string },
  reason: RegExp,
): Promise<{ id: string; sse: SseStream }> {
  const { id, sse } = await session(repository);
  const m = await sendMessage(admin, id, offline({ tool: 'shell', command: 'ls' }, 'list the files'));
  const done = await sse.turnDone(m, TURN_MS);
  expect(done.data.stopReason).toBe('error');
  const error = done.data.error as { code: string; message: string };
  expect(error.code).toBe('repository_clone_failed');
  expect(error.message).toContain(repository.url);
  if (repository.ref !== undefined) expect(error.message).toContain(repository.ref);
  expect(error.message).toMatch(reason);
  expect(sse.events.some((e) => e.event === 'error' && e.data.code === 'repository_clone_failed')).toBe(true);
  // Nothing ran and nothing was committed: the workspace is as empty as before.
  expect(toolOutput(sse, m)).toBe('');
  expect(await listing(admin, id)).toEqual([]);
  return { id, sse };
}

function repositorySuite(backend: 'claude' | 'pi') {
  it(
    `${backend}: the agent reads the cloned files; the Files API lists them; the diff shows exactly the agent's edit; after SIGKILL the next runner restores instead of cloning`,
    dumpOnFail(async () => {
      const { id, sse } = await session({ url: git.url });
      const m1 = await sendMessage(
        admin,
        id,
        offline(
          { tool: 'shell', command: 'cat src/greeting.txt README.md; git rev-parse HEAD' },
          'read the repository',
        ),
      );
      const { done: done1 } = await turnSaved(sse, m1, TURN_MS);
      expect(done1.data.stopReason).not.toBe('error');
      const out1 = toolOutput(sse, m1);
      expect(out1).toContain('hello from main');
      expect(out1).toContain('# loopback repository');
      // .git is part of the workspace: the agent's git sees the commit that was cloned.
      expect(out1).toContain(git.refs.main.commit);

      const files = await listing(admin, id);
      expect(files.filter((p) => !p.startsWith('.git/'))).toEqual(['README.md', 'src/greeting.txt']);
      expect(files).toContain('.git/HEAD');
      expect(files).toContain('.git/config');

      // The agent edits one file: the diff against the clone is exactly that change.
      const m2 = await sendMessage(
        admin,
        id,
        offline({ tool: 'shell', command: 'echo "edited by the agent" >> README.md' }, 'edit'),
      );
      await turnSaved(sse, m2, TURN_MS);
      const diff = await fetch(`${stack.url}/api/sessions/${id}/diff`, { headers: admin.headers() });
      expect(diff.status).toBe(200);
      const text = await diff.text();
      expect(text.match(/^diff --git .*$/gm)).toEqual(['diff --git a/README.md b/README.md']);
      expect(text.split('\n').filter((l) => /^[+-](?![+-])/.test(l))).toEqual(['+edited by the agent']);

      // SIGKILL between turns: the next runner restores the durable workspace and never clones.
      const task = await liveTask(stack, id);
      const served = git.requests();
      process.kill(task.pid as number, 'SIGKILL');
      await until(
        'the hub to see the killed runner gone',
        async () => (await admin.call<{ runner: unknown }>('GET', `/api/sessions/${id}`)).body.runner === null,
        60_000,
      );
      const m3 = await sendMessage(
        admin,
        id,
        offline({ tool: 'shell', command: 'cat README.md src/greeting.txt' }, 'read again'),
      );
      await turnSaved(sse, m3, TURN_MS);
      const out3 = toolOutput(sse, m3);
      expect(out3).toContain('edited by the agent');
      expect(out3).toContain('hello from main');
      expect((await liveTask(stack, id)).pid).not.toBe(task.pid);
      expect(git.requests()).toBe(served);
      await finish(id, sse);
    }),
    TURN_MS * 5,
  );

  it(
    `${backend}: a tag and a branch check out that ref`,
    dumpOnFail(async () => {
      for (const [ref, file, content] of [
        ['v1', 'src/greeting.txt', 'hello from v1'],
        ['feature', 'feature.txt', 'only on the feature branch'],
      ] as const) {
        const { id, sse } = await session({ url: git.url, ref });
        const m = await sendMessage(
          admin,
          id,
          offline({ tool: 'shell', command: `cat ${file}; git rev-parse HEAD` }, `read ${ref}`),
        );
        await turnSaved(sse, m, TURN_MS);
        const out = toolOutput(sse, m);
        expect(out).toContain(content);
        expect(out).toContain(git.refs[ref].commit);
        expect((await listing(admin, id)).filter((p) => !p.startsWith('.git/'))).toEqual(
          Object.keys(git.refs[ref].files).sort(),
        );
        await finish(id, sse);
      }
    }),
    TURN_MS * 3,
  );

  it(
    `${backend}: an unknown ref and a dead port end the turn with repository_clone_failed; the next message clones again`,
    dumpOnFail(async () => {
      const unknown = await cloneFails({ url: git.url, ref: 'no-such-ref' }, /couldn't find remote ref no-such-ref/);
      await finish(unknown.id, unknown.sse);
      const port = await freePort();
      const dead = await cloneFails({ url: `http://127.0.0.1:${port}/repo.git` }, /Failed to connect|Couldn't connect/);
      // A retry is the next message: the clone runs again, and works once the server is there.
      const late = await startGitServer({ port });
      try {
        const m = await sendMessage(
          admin,
          dead.id,
          offline({ tool: 'shell', command: 'cat src/greeting.txt' }, 'retry'),
        );
        await turnSaved(dead.sse, m, TURN_MS);
        expect(toolOutput(dead.sse, m)).toContain('hello from main');
      } finally {
        await late.stop();
      }
      await finish(dead.id, dead.sse);
    }),
    TURN_MS * 3,
  );
}

describe.sequential('start from a repository through HTTP', () => {
  it('400 naming repository.url for hosts the settings leave out and for malformed URLs', async () => {
    const set = await admin.call('PUT', '/api/admin/settings', { repositoryHosts: ['git.example.org'] });
    expect(set.status, set.text).toBe(200);
    try {
      const r = await admin.call<{ error: { field: string; message: string } }>('POST', '/api/sessions', {
        repository: { url: git.url },
      });
      expect(r.status).toBe(400);
      expect(r.body.error.field).toBe('repository.url');
      expect(r.body.error.message).toMatch(/not an allowed repository host/);
    } finally {
      expect((await admin.call('PUT', '/api/admin/settings', { repositoryHosts: ['*'] })).status).toBe(200);
    }
    for (const url of ['git@127.0.0.1:repo.git', 'file:///etc', `http://u:p@127.0.0.1:${git.port}/repo.git`]) {
      const r = await admin.call<{ error: { field: string } }>('POST', '/api/sessions', { repository: { url } });
      expect({ url, status: r.status, field: r.body.error.field }).toEqual({
        url,
        status: 400,
        field: 'repository.url',
      });
    }
    // Private addresses stay refused even where loopback is allowed (the local stack).
    const r = await admin.call<{ error: { field: string } }>('POST', '/api/sessions', {
      repository: { url: 'http://169.254.169.254/latest' },
    });
    expect(r.status).toBe(400);
  });

  describe.sequential('claude', () => repositorySuite('claude'));

  describe.sequential('pi', () => {
    it('switch the backend to pi', async () => {
      expect((await admin.call('PUT', '/api/admin/settings', { llmBackend: 'pi' })).status).toBe(200);
    });
    repositorySuite('pi');
  });
});
