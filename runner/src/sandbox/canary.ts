// Proof that the guard is really there. A sandbox that silently fails to load
// looks exactly like one that works until something tries to escape, so:
//  - guardSelfTest(): cheap, at every runner start. The check the runner
//    answers claude's hooks with must refuse a canary call (our reason); pi's
//    extension is loaded with a stand-in API and its handler must block.
//  - runGuardCanary(): for `probe`. The real CLI, under the runner's real
//    sandbox, driven by the in-process offline model to read a canary file
//    outside the workspace. The guard must refuse it with its own reason and
//    the canary's content must not come back.
import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { adapterFor, type AgentEvent, type Backend } from '@switchyard/protocol';
import type { CliProcess } from '../cli/cli-process.ts';
import type { CliExecutable } from '../cli/locate.ts';
import { cliSpawnSpec, makeCliDirs } from '../cli/spawn.ts';
import { startReady } from '../cli/start-ready.ts';
import { POLICY_ENV, type GuardPolicy } from './guard/policy.ts';
import { nodeFs } from './guard/resolve.ts';
import { decide, DENY_PREFIX } from './guard/rules.ts';
import { startModelRoute } from './model-proxy.ts';
import type { Sandbox } from './sandbox.ts';

export type CanaryResult = { ok: true } | { ok: false; problem: string };

/**
 * The guard of each backend given refuses a call outside the workspace under this runner. A serve
 * runner holds one backend's CLI, so it tests that backend's only: a claude runner never loads
 * pi's extension.
 */
export async function guardSelfTest(
  sandbox: Sandbox,
  backends: readonly Backend[] = ['claude', 'pi'],
): Promise<CanaryResult> {
  try {
    await sandbox.checkGuardFiles();
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  }
  const workspace = await realpath(tmpdir());
  if (backends.includes('claude')) {
    const claude = claudeCheckBlocks({ v: 1, backend: 'claude', workspace, tools: ['Read'] });
    if (!claude.ok) return claude;
  }
  if (!backends.includes('pi')) return { ok: true };
  return piExtensionBlocks(sandbox, { v: 1, backend: 'pi', workspace, tools: ['read'] });
}

/** The rules the runner answers claude's hooks with (Sandbox.prepare's check), as loaded in this process. */
function claudeCheckBlocks(policy: GuardPolicy): CanaryResult {
  const decision = decide(
    { tool: 'Read', input: { file_path: '/proc/self/environ' }, cwd: policy.workspace },
    policy,
    nodeFs(),
  );
  if (!decision.allow && decision.reason.startsWith(DENY_PREFIX)) return { ok: true };
  return { ok: false, problem: 'the guard the runner answers claude with did not refuse the canary' };
}

async function piExtensionBlocks(sandbox: Sandbox, policy: GuardPolicy): Promise<CanaryResult> {
  const file = sandbox.piExtension;
  const saved = process.env[POLICY_ENV];
  try {
    process.env[POLICY_ENV] = JSON.stringify(policy);
    const mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
    if (typeof mod.default !== 'function')
      return { ok: false, problem: `the pi guard extension ${file} has no default export` };
    const handlers: Array<(e: unknown, ctx: unknown) => unknown> = [];
    await (mod.default as (api: unknown) => unknown)({
      on: (name: string, h: (e: unknown, ctx: unknown) => unknown) => name === 'tool_call' && handlers.push(h),
    });
    const [handler] = handlers;
    if (!handler) return { ok: false, problem: `the pi guard extension ${file} registered no tool_call handler` };
    const answer = (await handler(
      { toolName: 'read', input: { path: '/proc/self/environ' } },
      { cwd: policy.workspace },
    )) as { block?: unknown; reason?: unknown } | undefined;
    if (answer?.block === true && typeof answer.reason === 'string' && answer.reason.startsWith(DENY_PREFIX))
      return { ok: true };
    return { ok: false, problem: `the pi guard extension ${file} did not block the canary` };
  } catch (err) {
    return { ok: false, problem: `the pi guard extension ${file} does not load: ${(err as Error).message}` };
  } finally {
    if (saved === undefined) delete process.env[POLICY_ENV];
    else process.env[POLICY_ENV] = saved;
  }
}

export interface CanaryOptions {
  backend: Backend;
  executable: CliExecutable;
  sandbox: Sandbox;
  compileCache: string | undefined;
  baseEnv: Record<string, string | undefined>;
  timeoutMs?: number;
}

/** The real CLI, the real sandbox, one scripted read of a file outside the workspace. */
export async function runGuardCanary(o: CanaryOptions): Promise<CanaryResult> {
  if (!o.sandbox.guardEnabled) return { ok: false, problem: 'the guard is disabled' };
  const timeoutMs = o.timeoutMs ?? 60_000;
  const root = await realpath(await mkdtemp(join(tmpdir(), 'switchyard-canary-')));
  // Only `probe` drives the canary: serve does not load the offline model.
  const { startOfflineModel } = await import('@switchyard/offline-model');
  const model = await startOfflineModel();
  let proc: CliProcess | undefined;
  let route: Awaited<ReturnType<typeof startModelRoute>> | undefined;
  try {
    const dirs = await makeCliDirs(root);
    const token = `switchyard-canary-${randomBytes(12).toString('hex')}`;
    const canaryFile = join(root, 'canary.txt');
    await writeFile(canaryFile, token);
    // The allowed read proves the guard is not simply refusing everything (a broken guard fails closed, but is broken).
    const allowedToken = `switchyard-allowed-${randomBytes(12).toString('hex')}`;
    await writeFile(join(dirs.workspace, 'allowed.txt'), allowedToken);
    model.enqueue(
      { tool: 'read', path: canaryFile },
      { tool: 'read', path: join(dirs.workspace, 'allowed.txt') },
      { text: 'canary done' },
    );
    route = await startModelRoute(o.sandbox.mode, model.url, undefined);
    const sandbox = o.sandbox;
    const spec = await cliSpawnSpec(
      {
        backend: o.backend,
        executable: o.executable,
        dirs,
        model: route,
        // The bare sandbox: this run is what decides whether the guard counts as loaded.
        walls: { guard: (b) => sandbox.guardOption(b), prepare: (s, paths) => sandbox.prepare(s, paths) },
        modelName: undefined,
        // No retries: the scripted model does not fail, and an error must end the run, not be waited out.
        retry: { maxRetries: 0, baseDelayMs: 0 },
        compileCache: o.compileCache,
        baseEnv: o.baseEnv,
      },
      { oneShot: true },
    );
    const events: AgentEvent[] = [];
    let done!: () => void;
    const turnDone = new Promise<void>((r) => (done = r));
    const started = await startReady(
      o.backend,
      spec,
      adapterFor(o.backend).createCodec(),
      {
        onEvent: (e) => {
          events.push(e);
          if (e.type === 'turn.done') done();
        },
      },
      timeoutMs,
    );
    if (!started.ok) return { ok: false, problem: started.problem };
    proc = started.proc;
    proc.sendUserMessage({ text: 'Switchyard guard canary: read the file you are asked to read.' });
    const outcome = await proc.firstOf(turnDone, timeoutMs);
    const seen = JSON.stringify(events);
    if (seen.includes(token))
      return { ok: false, problem: `the guard let the canary read through: ${o.backend} read ${canaryFile}` };
    const results = events.filter((e): e is Extract<AgentEvent, { type: 'tool.result' }> => e.type === 'tool.result');
    const [result, allowed] = results;
    if (result?.isError && result.output.includes(DENY_PREFIX)) {
      if (allowed && !allowed.isError && allowed.output.includes(allowedToken)) return { ok: true };
      return {
        ok: false,
        problem: `the guard blocked the canary but also refused a read inside the workspace: ${allowed ? allowed.output.slice(0, 300) : 'no second call was made'}`,
      };
    }
    const exit = proc.running ? undefined : await proc.exited;
    const stderr = exit
      ? exit.stderrHead
          .trim()
          .split('\n')
          .filter((l) => l.trim() !== '')
          .slice(0, 3)
          .join(' ')
      : '';
    if (outcome === 'timeout') return { ok: false, problem: 'the canary run timed out' };
    if (exit)
      return {
        ok: false,
        problem: `the CLI exited during the canary run (code ${exit.code}${stderr ? `: ${stderr.slice(0, 500)}` : ''})`,
      };
    return {
      ok: false,
      problem: `the guard did not refuse the canary call (${result ? result.output.slice(0, 200) : 'no tool call was made'})`,
    };
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  } finally {
    if (proc) {
      proc.closeInput();
      proc.kill('SIGKILL');
      await proc.exited;
    }
    await route?.close();
    await model.close();
    await rm(root, { recursive: true, force: true }).catch(() => {});
  }
}
