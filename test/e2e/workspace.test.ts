// Durable workspaces end to end, through HTTP only, with the real claude and pi CLIs on the
// offline model (docs/DESIGN.md "Workspaces"): a person's upload reaches the agent, the agent's
// file downloads byte-identical, a SIGKILLed runner's successor has every file of the last
// completed turn (and not what the killed turn wrote), the idle stop and a SIGTERM save what
// appeared after the last turn, an idle-stopped session still lists and downloads with no runner live, bad paths,
// limits and another user are refused.
import { existsSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { E2eHarness, liveTask, sendMessage, listing, offline, toolOutput, turnSaved } from '../helpers/e2e-harness.ts';
import { Api, until } from '../helpers/sse-client.ts';
import { STACK_READY_MS } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

const h = new E2eHarness();
const { dumpOnFail } = h;
let stack: Stack;
let admin: Api;

beforeAll(async () => {
  ({ stack, admin } = await h.start('workspace'));
  // Idle stop after a minute, so a test can watch a session's runner go away on its own.
  const r = await admin.call('PUT', '/api/admin/settings', { sessionIdleMinutes: 1 });
  expect(r.status, r.text).toBe(200);
}, STACK_READY_MS + 60_000);

afterAll(() => h.stop(), 120_000);

async function raw(api: Api, method: string, path: string, body?: Uint8Array | string): Promise<Response> {
  return fetch(`${stack.url}${path}`, {
    method,
    headers: api.headers(body === undefined ? {} : { 'content-type': 'application/octet-stream' }),
    ...(body !== undefined && { body: typeof body === 'string' ? body : new Blob([body as Uint8Array<ArrayBuffer>]) }),
  });
}

function workspaceOf(task: { logPath: string }): string {
  return join(stack.hostStateDir, 'tasks', basename(task.logPath, '.log'), 'workspace');
}

/** name → content of a .tar.gz from the archive route. */
function untarGz(gz: Uint8Array): Map<string, string> {
  const tar = gunzipSync(gz);
  const out = new Map<string, string>();
  let at = 0;
  let pax: string | undefined;
  while (at + 512 <= tar.length) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = Number.parseInt(h.subarray(124, 136).toString('utf8').replace(/\0.*$/s, ''), 8);
    const body = tar.subarray(at + 512, at + 512 + size).toString('utf8');
    if (String.fromCharCode(h[156] ?? 0) === 'x') pax = /\d+ path=(.*)\n/s.exec(body)?.[1];
    else {
      out.set(pax ?? name, body);
      pax = undefined;
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

function workspaceSuite(backend: 'claude' | 'pi') {
  it(
    `${backend}: upload → the agent reads it; the agent writes → downloads byte-identical; an upload to a live runner reaches the agent; SIGKILL keeps every file of the last completed turn and loses the killed turn's; idle stop → list and download with no runner`,
    dumpOnFail(async () => {
      const created = await admin.call<{ id: string; backend: string }>('POST', '/api/sessions', {});
      expect(created.body.backend).toBe(backend);
      const id = created.body.id;
      const sse = await admin.events(id);
      h.streams.add(sse);

      // A file given before any runner exists: the first runner restores it before its CLI starts.
      const given = `given by a person to ${backend}: ${Date.now()}\n`;
      const put = await raw(admin, 'PUT', `/api/sessions/${id}/files/notes/input.txt`, given);
      expect(put.status).toBe(201);
      const m1 = await sendMessage(
        admin,
        id,
        offline({ tool: 'shell', command: 'cat notes/input.txt' }, 'read the note'),
      );
      await turnSaved(sse, m1, TURN_MS);
      expect(toolOutput(sse, m1)).toContain(given.trim());

      // The agent writes a file; it downloads byte for byte.
      const written = `línea uno\nline two ✓ ${backend}\n\ttabbed\n`;
      const m2 = await sendMessage(
        admin,
        id,
        offline({ tool: 'write', path: 'out/result.txt', content: written }, 'write'),
      );
      const { saved } = await turnSaved(sse, m2, TURN_MS);
      expect(saved.data).toMatchObject({ files: 2 });
      const got = await raw(admin, 'GET', `/api/sessions/${id}/files/out/result.txt`);
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(written, 'utf8'))).toBe(true);
      expect(got.headers.get('content-disposition')).toMatch(/^attachment/);
      // The runner put nothing of its own (config, guard files) into the workspace.
      expect(await listing(admin, id)).toEqual(['notes/input.txt', 'out/result.txt']);

      // An upload while the runner is live reaches its workspace, and the agent's next tool call.
      const task = await liveTask(stack, id);
      const live = `uploaded while ${backend} runs\n`;
      expect((await raw(admin, 'PUT', `/api/sessions/${id}/files/live.txt`, live)).status).toBe(201);
      await until(
        'the live upload in the runner workspace',
        () => existsSync(join(workspaceOf(task), 'live.txt')),
        30_000,
      );
      const m3 = await sendMessage(
        admin,
        id,
        offline({ tool: 'shell', command: 'cat live.txt; ln -s /etc/passwd leak; ln -s / rootdir' }, 'read the upload'),
      );
      await turnSaved(sse, m3, TURN_MS);
      expect(toolOutput(sse, m3)).toContain(live.trim());
      // Links the agent planted are not saved, and nothing they point at is read.
      expect(await listing(admin, id)).toEqual(['live.txt', 'notes/input.txt', 'out/result.txt']);
      expect((await raw(admin, 'GET', `/api/sessions/${id}/files/leak`)).status).toBe(404);

      // A turn in flight when the runner dies: what it wrote after the last workspace.saved is lost.
      const m4 = await sendMessage(
        admin,
        id,
        offline({ tool: 'shell', command: 'echo in-flight > inflight.txt && sleep 30' }, 'write then hang'),
      );
      await until('the in-flight file on disk', () => existsSync(join(workspaceOf(task), 'inflight.txt')), TURN_MS);
      process.kill(task.pid as number, 'SIGKILL');
      const killed = await sse.turnDone(m4, 90_000);
      expect(killed.data.stopReason).toBe('error');
      await until(
        'the session to settle after the kill',
        async () =>
          (await admin.call<{ turn: unknown; state: string }>('GET', `/api/sessions/${id}`)).body.turn === null,
        60_000,
      );
      // The next turn's runner is a new process with every file of the last completed turn.
      const m5 = await sendMessage(
        admin,
        id,
        offline(
          {
            tool: 'shell',
            command: 'cat notes/input.txt out/result.txt live.txt; test -e inflight.txt || echo INFLIGHT-LOST',
          },
          'check the files',
        ),
      );
      await turnSaved(sse, m5, TURN_MS);
      const out5 = toolOutput(sse, m5);
      expect(out5).toContain(given.trim());
      expect(out5).toContain('line two ✓');
      expect(out5).toContain(live.trim());
      expect(out5).toContain('INFLIGHT-LOST');
      const next = await liveTask(stack, id);
      expect(next.pid).not.toBe(task.pid);
      // A file that appears after the last turn's save (as an agent's background process would
      // write it) becomes durable only through the runner's own end, here the idle stop.
      const late = `written after the last turn, ${backend}\n`;
      writeFileSync(join(workspaceOf(next), 'after-turn.txt'), late);

      // Idle stop (a minute without activity), then the durable copy serves with no runner.
      await until(
        'the idle runner to stop',
        async () => {
          const s = await admin.call<{ runner: unknown; state: string }>('GET', `/api/sessions/${id}`);
          return s.body.runner === null && s.body.state === 'stopped';
        },
        150_000,
      );
      expect((await stack.runners()).filter((t) => t.sessionId === id && t.lastStatus === 'RUNNING')).toEqual([]);
      expect(await listing(admin, id)).toEqual(['after-turn.txt', 'live.txt', 'notes/input.txt', 'out/result.txt']);
      const again = await raw(admin, 'GET', `/api/sessions/${id}/files/out/result.txt`);
      expect(Buffer.from(await again.arrayBuffer()).toString('utf8')).toBe(written);
      const archive = await raw(admin, 'GET', `/api/sessions/${id}/archive`);
      expect(archive.status).toBe(200);
      const entries = untarGz(new Uint8Array(await archive.arrayBuffer()));
      expect(entries.get('out/result.txt')).toBe(written);
      expect(entries.get('notes/input.txt')).toBe(given);
      expect(entries.get('after-turn.txt')).toBe(late);
      await sse.close();
      expect((await admin.call('DELETE', `/api/sessions/${id}`)).status).toBe(204);
    }),
    TURN_MS * 6,
  );

  it(
    `${backend}: SIGTERM (as ECS stops a task) saves what appeared in the workspace after the last turn's save`,
    dumpOnFail(async () => {
      const created = await admin.call<{ id: string }>('POST', '/api/sessions', {});
      const id = created.body.id;
      h.sessions.push(id);
      const sse = await admin.events(id);
      h.streams.add(sse);
      const m1 = await sendMessage(
        admin,
        id,
        offline({ tool: 'write', path: 'turn.txt', content: 'from the turn\n' }, 'write'),
      );
      await turnSaved(sse, m1, TURN_MS);
      const task = await liveTask(stack, id);
      // Written after the turn's workspace.saved, as an agent's background process would: only the
      // runner's own end can make it durable.
      const late = `written before SIGTERM, ${backend}\n`;
      writeFileSync(join(workspaceOf(task), 'before-term.txt'), late);
      process.kill(task.pid as number, 'SIGTERM');
      await until(
        'the session at rest after SIGTERM',
        async () => {
          const s = await admin.call<{ runner: unknown; state: string }>('GET', `/api/sessions/${id}`);
          return s.body.runner === null && s.body.state === 'stopped';
        },
        60_000,
      );
      expect(await listing(admin, id)).toEqual(['before-term.txt', 'turn.txt']);
      const got = await raw(admin, 'GET', `/api/sessions/${id}/files/before-term.txt`);
      expect(Buffer.from(await got.arrayBuffer()).toString('utf8')).toBe(late);
      await sse.close();
    }),
    TURN_MS * 2,
  );
}

describe.sequential('durable workspaces through HTTP', () => {
  describe.sequential('claude', () => workspaceSuite('claude'));

  it('bad paths are 400 naming path, limits 413 naming the limit, another user 404', async () => {
    const { body } = await admin.call<{ id: string }>('POST', '/api/sessions', {});
    const id = body.id;
    for (const bad of ['..%2Fescape', '%2Fetc%2Fpasswd', 'a//b', 'a%00b', 'a%5Cb']) {
      const r = await raw(admin, 'PUT', `/api/sessions/${id}/files/${bad}`, 'x');
      const j = (await r.json()) as { error: { field?: string } };
      expect({ bad, status: r.status, field: j.error.field }).toEqual({ bad, status: 400, field: 'path' });
    }
    expect((await raw(admin, 'PUT', `/api/sessions/${id}/files/%2e%2e/%2e%2e/x`, 'x')).status).toBe(404);
    expect((await admin.call('PUT', '/api/admin/settings', { workspaceMaxFileBytes: 1024 })).status).toBe(200);
    try {
      const big = await raw(admin, 'PUT', `/api/sessions/${id}/files/big.bin`, new Uint8Array(1025));
      expect(big.status).toBe(413);
      expect(((await big.json()) as { error: { field: string } }).error.field).toBe('maxFileBytes');
    } finally {
      await admin.call('PUT', '/api/admin/settings', { workspaceMaxFileBytes: 32 * 1024 * 1024 });
    }
    expect((await raw(admin, 'PUT', `/api/sessions/${id}/files/mine.txt`, 'mine')).status).toBe(201);
    const made = await admin.call('POST', '/api/admin/users', {
      username: 'ws-eve',
      password: 'eve-password-long-enough',
      currentPassword: stack.admin.password,
    });
    expect(made.status, made.text).toBe(201);
    const eve = await Api.login(stack.url, 'ws-eve', 'eve-password-long-enough');
    for (const [method, path] of [
      ['GET', 'files'],
      ['GET', 'files/mine.txt'],
      ['PUT', 'files/mine.txt'],
      ['DELETE', 'files/mine.txt'],
      ['GET', 'archive'],
    ] as const) {
      const r = await raw(eve, method, `/api/sessions/${id}/${path}`, method === 'PUT' ? 'eve' : undefined);
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 404 });
    }
    expect(await (await raw(admin, 'GET', `/api/sessions/${id}/files/mine.txt`)).text()).toBe('mine');
  });

  describe.sequential('pi', () => {
    it('switch the backend to pi', async () => {
      expect((await admin.call('PUT', '/api/admin/settings', { llmBackend: 'pi' })).status).toBe(200);
    });
    workspaceSuite('pi');
  });
});
