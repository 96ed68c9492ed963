import { describe, expect, it } from 'vitest';
import { EcsLauncher } from '../src/launchers/ecs-launcher.ts';
import type { Session } from '../src/sessions/schemas.ts';
import {
  call,
  createSession,
  endWithTranscript,
  FakeRunner,
  hubContext,
  launchAndConnect,
  postMessage,
  until,
} from './hub-helpers.ts';
import { req } from './workspace-helpers.ts';

// A launch says whether the session has anything to restore (LaunchRequest.fresh, runner env
// SWITCHYARD_FRESH_SESSION; docs/DESIGN.md "Runner behaviour (serve)"). A fresh runner starts its
// CLI before the welcome, so the flag must be absent whenever the welcome brings something a CLI
// has to start with. Real workerd, D1, Durable Object, R2; a fake launcher records the requests.

/** A new session of the test user's with this body, by its id. */
async function create(ctx: Awaited<ReturnType<typeof hubContext>>, body: Record<string, unknown>): Promise<string> {
  const r = await call<Session>(ctx.app, 'POST', '/api/sessions', { token: ctx.token, body });
  expect(r.status).toBe(201);
  return r.body.id;
}

async function firstLaunch(ctx: Awaited<ReturnType<typeof hubContext>>, sid: string) {
  expect((await postMessage(ctx, sid, 'hello')).status).toBe(202);
  return until('a launch', () => ctx.launcher.startsFor(sid)[0]);
}

describe('LaunchRequest.fresh', () => {
  it('a new session: fresh, and the container environment says so; after a transcript is stored: not fresh', async () => {
    const ctx = await hubContext();
    const sid = await createSession(ctx);
    const { runner, launch } = await launchAndConnect(ctx, sid);
    expect(launch.fresh).toBe(true);
    expect(EcsLauncher.containerEnvironment(launch, null)).toContainEqual({
      name: 'SWITCHYARD_FRESH_SESSION',
      value: '1',
    });
    // A message waits for this runner: its CLI takes that message first, no warm-up before it.
    expect(launch.warmUp).toBeUndefined();
    expect(EcsLauncher.containerEnvironment(launch, null).map((e) => e.name)).not.toContain('SWITCHYARD_WARM_UP');
    await endWithTranscript(ctx, sid, runner);
    expect((await postMessage(ctx, sid, 'again')).status).toBe(202);
    const second = await until('second launch', () => ctx.launcher.startsFor(sid)[1]);
    expect(second.fresh).toBeUndefined();
    expect(EcsLauncher.containerEnvironment(second, null).map((e) => e.name)).not.toContain('SWITCHYARD_FRESH_SESSION');
    const next = await FakeRunner.connect(ctx.app, { token: second.runnerToken, sessionId: sid });
    next.hello(sid);
    expect((await next.waitFor('welcome')).transcript).toBeDefined();
    next.close();
    runner.close();
  });

  it('not fresh: a repository to clone, approval mode ask, a file put into the workspace before the first message', async () => {
    const ctx = await hubContext();
    const repo = await create(ctx, { repository: { url: 'https://git.example.org/acme/widgets.git' } });
    expect((await firstLaunch(ctx, repo)).fresh).toBeUndefined();
    const ask = await create(ctx, { approvals: 'ask' });
    expect((await firstLaunch(ctx, ask)).fresh).toBeUndefined();
    const files = await create(ctx, {});
    const put = await req(ctx, 'PUT', `/api/sessions/${files}/files/notes.md`, { token: ctx.token, body: 'hi' });
    expect(put.status).toBeLessThan(300);
    expect((await firstLaunch(ctx, files)).fresh).toBeUndefined();
    // The control: the same context, nothing to restore.
    expect((await firstLaunch(ctx, await create(ctx, {}))).fresh).toBe(true);
  });
});

describe('LaunchRequest.warmUp', () => {
  it('a fresh session started ahead of its first message: its CLI warms up; a session that is not fresh: not', async () => {
    const ctx = await hubContext();
    const startAhead = async (body: Record<string, unknown>) => {
      const sid = await create(ctx, body);
      const r = await call(ctx.app, 'POST', `/api/sessions/${sid}/start`, { token: ctx.token });
      expect(r.status, r.text).toBe(202);
      return until('a launch', () => ctx.launcher.startsFor(sid)[0]);
    };
    const fresh = await startAhead({});
    expect(fresh).toMatchObject({ fresh: true, warmUp: true });
    const names = EcsLauncher.containerEnvironment(fresh, null);
    expect(names).toContainEqual({ name: 'SWITCHYARD_FRESH_SESSION', value: '1' });
    expect(names).toContainEqual({ name: 'SWITCHYARD_WARM_UP', value: '1' });
    // Approval mode ask: the CLI starts after the welcome, with the approval hook; no warm-up either.
    const ask = await startAhead({ approvals: 'ask' });
    expect(ask.fresh).toBeUndefined();
    expect(ask.warmUp).toBeUndefined();
    expect(EcsLauncher.containerEnvironment(ask, null).map((e) => e.name)).not.toContain('SWITCHYARD_WARM_UP');
  });
});
