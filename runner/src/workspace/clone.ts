import { spawn } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { lstat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ErrorInfo, Repository, WorkspaceBaseline } from '@switchyard/protocol';
import { classifyHost } from '@switchyard/protocol';
import { messageOf, type Result } from '../errors.ts';
import { killGroup } from '../process-group.ts';
import { cloneEnv, cloneError, cloneSteps, decideHost, gitReason, hostAndPort, REV_PARSE_HEAD } from './clone-plan.ts';

// Clones a session's repository into its workspace (docs/DESIGN.md "Start from a repository"):
// resolve and check the host, then run clone-plan.ts's git commands as the runner (never the
// CLI's uid, never inside its sandbox) in the workspace, all within one deadline. The result is
// the baseline the caller commits with the workspace.

export interface CloneOptions {
  /** The workspace (empty, or holding only what a person put there before the first message). */
  dir: string;
  allowLoopback: boolean;
  timeoutMs: number;
  /** The runner's PATH, to find git; nothing else of the runner's environment is passed on. */
  path: string | undefined;
  /** Every address a name resolves to (tests give their own; default the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
}

/** Bytes of git output kept for the error message. */
const OUTPUT_CAP = 64 * 1024;

export async function cloneRepository(
  repository: Repository,
  o: CloneOptions,
): Promise<Result<WorkspaceBaseline, ErrorInfo>> {
  const deadline = Date.now() + o.timeoutMs;
  const { host } = hostAndPort(repository.url);
  let resolved: string[] = [];
  if (classifyHost(host) === 'name' || host === 'localhost' || host.endsWith('.localhost')) {
    try {
      // The lookup counts against the same deadline: a resolver that never answers ends the clone too.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${Math.round(o.timeoutMs / 1000)} s`)),
          o.timeoutMs,
        );
      });
      resolved = await Promise.race([(o.resolve ?? systemResolve)(host), late]).finally(() => clearTimeout(timer));
    } catch (err) {
      return { ok: false, error: cloneError(repository, `${host} did not resolve: ${messageOf(err)}`) };
    }
  }
  const decision = decideHost(repository.url, resolved, o.allowLoopback);
  if (!decision.ok) return { ok: false, error: cloneError(repository, decision.message) };
  const gitDir = join(o.dir, '.git');
  if (
    await lstat(gitDir).then(
      () => true,
      () => false,
    )
  )
    return { ok: false, error: cloneError(repository, 'the workspace already holds a .git') };
  const env = cloneEnv(o.path);
  // A failed attempt leaves no repository behind, so the next attempt starts where this one did.
  const failed = async (run: Exclude<GitRun, { ok: true }>): Promise<Result<WorkspaceBaseline, ErrorInfo>> => {
    await rm(gitDir, { recursive: true, force: true });
    return { ok: false, error: cloneError(repository, reasonOf(run, o.timeoutMs)) };
  };
  for (const args of cloneSteps(repository, decision.resolve)) {
    const run = await git(args, o.dir, env, deadline - Date.now());
    if (!run.ok) return failed(run);
  }
  const head = await git(REV_PARSE_HEAD, o.dir, env, deadline - Date.now());
  if (!head.ok) return failed(head);
  return {
    ok: true,
    value: {
      url: repository.url,
      ...(repository.ref !== undefined && { ref: repository.ref }),
      commit: head.stdout.trim(),
    },
  };
}

type GitRun = { ok: true; stdout: string } | { ok: false; reason: string } | { ok: false; timedOut: true };

function reasonOf(run: Exclude<GitRun, { ok: true }>, timeoutMs: number): string {
  return 'timedOut' in run ? `timed out after ${Math.round(timeoutMs / 1000)} s` : run.reason;
}

/** One git command in its own process group, killed whole at the deadline. */
function git(args: string[], cwd: string, env: Record<string, string>, timeoutMs: number): Promise<GitRun> {
  if (timeoutMs <= 0) return Promise.resolve({ ok: false, timedOut: true });
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => {
      if (stdout.length < OUTPUT_CAP) stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < OUTPUT_CAP) stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ ok: false, reason: `cannot run git: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) resolve({ ok: false, timedOut: true });
      else if (code === 0) resolve({ ok: true, stdout });
      else resolve({ ok: false, reason: stderr.trim() === '' ? `git exited ${code ?? signal}` : gitReason(stderr) });
    });
  });
}
