import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  JsonlSplitter,
  type AgentCodec,
  type AgentEvent,
  type ApprovalAnswerLine,
  type CliExit,
  type UserMessage,
} from '@switchyard/protocol';
import { killGroup } from '../process-group.ts';
import type { Readiness } from './readiness.ts';
import type { PreparedSpawn } from './spawn.ts';

/** How much of the CLI's stderr is kept: its head is what explains a failure. */
const STDERR_KEEP = 8 * 1024;
/** After the CLI exits, how long its pipes may stay open before they are closed for it. */
const PIPE_DRAIN_MS = 1000;

export interface CliProcessHandlers {
  onEvent(event: AgentEvent): void;
  /** Every stdout/stdin record, for tests and recordings. */
  onLine?(direction: 'in' | 'out', line: string): void;
  /** A stdout chunk arrived, before it is split and parsed (bench hop stamps). */
  onStdoutChunk?(): void;
}

/**
 * One CLI process: spawned in its own process group (so kill reaches the
 * tools it started), stdout framed by JsonlSplitter and parsed by the codec.
 */
export class CliProcess {
  readonly pid: number;
  readonly exited: Promise<CliExit>;
  private stderr = '';
  private exitInfo: CliExit | undefined;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly codec: AgentCodec;
  private readonly handlers: CliProcessHandlers;
  /** A CLI whose guard its handshake registers (claude) takes no message before the handshake. */
  private handshaken: boolean;

  private constructor(
    child: ChildProcessWithoutNullStreams,
    codec: AgentCodec,
    handlers: CliProcessHandlers,
    guardedByHandshake: boolean,
  ) {
    this.child = child;
    this.codec = codec;
    this.handlers = handlers;
    this.handshaken = !guardedByHandshake;
    if (child.pid === undefined) throw new Error('CLI process has no pid');
    this.pid = child.pid;
    const splitter = new JsonlSplitter();
    const emitLines = (lines: string[]) => {
      for (const line of lines) {
        handlers.onLine?.('out', line);
        for (const event of codec.parse(line)) handlers.onEvent(event);
        for (const input of codec.takeInput()) this.write(input);
      }
    };
    child.stdout.on('data', (chunk: Buffer) => {
      handlers.onStdoutChunk?.();
      emitLines(splitter.push(chunk));
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (this.stderr.length < STDERR_KEEP)
        this.stderr += chunk.toString('utf8').slice(0, STDERR_KEEP - this.stderr.length);
    });
    // stdin errors (EPIPE after the CLI died) surface through the exit path.
    child.stdin.on('error', () => {});
    child.once('exit', () => {
      // What the CLI leaves in its group (a tool it started, a process of the sandbox's setup when
      // the leader died early) goes with it. The group's id cannot name another group yet: it stays
      // taken while any member lives.
      killGroup(this.pid, 'SIGKILL');
      // 'close' waits for stdout/stderr to close too. A tool that left the CLI's process group
      // (setsid) can hold them open forever after the CLI died, so give the pipes a moment and
      // then cut them.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_DRAIN_MS).unref();
    });
    this.exited = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        emitLines(splitter.flush());
        const exit: CliExit = { code, signal, stderrHead: this.stderr };
        this.exitInfo = exit;
        for (const event of codec.end(exit)) handlers.onEvent(event);
        resolve(exit);
      });
    });
  }

  /** Spawns the CLI; refuses a spec whose guard hooks nothing would answer (`guardArming`). */
  static async start(spec: PreparedSpawn, codec: AgentCodec, handlers: CliProcessHandlers): Promise<CliProcess> {
    const armGuard = guardArming(spec, codec);
    for (const file of spec.files) await writeConfigFile(file);
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const proc = new CliProcess(child, codec, handlers, spec.toolHooks !== undefined);
    // Before any of its output is parsed: the check looks at the files through this process.
    armGuard(proc.pid);
    for (const line of codec.initLines()) proc.write(line);
    return proc;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** Whichever comes first: `wanted`, the CLI's exit, or `timeoutMs`. */
  async firstOf(wanted: Promise<unknown>, timeoutMs: number): Promise<'done' | 'exited' | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        wanted.then(() => 'done' as const),
        this.exited.then(() => 'exited' as const),
        new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  sendUserMessage(message: UserMessage): void {
    if (!this.handshaken) throw new Error("a message to the CLI before its handshake registered the guard's hooks");
    this.write(this.codec.encodeUserMessage(message));
  }

  /** The readiness handshake's lines (readiness.ts): for claude, what registers the guard's hooks. */
  handshake(readiness: Readiness): void {
    for (const line of readiness.lines) this.write(line);
    this.handshaken = true;
  }

  interrupt(): void {
    this.write(this.codec.encodeInterrupt());
  }

  /** Writes the answer to an approval the CLI waits on; false when it no longer waits. */
  answerApproval(answer: ApprovalAnswerLine): boolean {
    const line = this.codec.encodeApproval(answer);
    if (line === undefined) return false;
    this.write(line);
    return true;
  }

  /** A runner-level control line (readiness probe); never user text, which goes through sendUserMessage. */
  writeControl(line: string): void {
    this.write(line);
  }

  closeInput(): void {
    this.child.stdin.end();
  }

  /** Signals the whole process group: the CLI and every tool process it spawned. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.running) killGroup(this.pid, signal);
  }

  private write(line: string): void {
    this.handlers.onLine?.('in', line.replace(/\n$/, ''));
    if (this.child.stdin.writable) this.child.stdin.write(line);
  }
}

/**
 * How `codec` comes to answer the guard's hooks of `spec` (claude) once the CLI has a pid: with the
 * sandbox's check, which looks at the files through that process. Throws, before anything is
 * spawned, when the spec has hooks and nothing to answer them: claude runs whatever call nobody
 * answers for.
 */
export function guardArming(spec: PreparedSpawn, codec: AgentCodec): (cliPid: number) => void {
  const { toolHooks, checkTool } = spec;
  if (toolHooks === undefined) return () => {};
  if (checkTool === undefined || codec.checkToolCalls === undefined)
    throw new Error("the CLI's guard hooks have nothing to answer them; it is not started without its guard");
  const answer = codec.checkToolCalls.bind(codec);
  return (cliPid) => answer(toolHooks, (call) => checkTool(call, cliPid));
}

/**
 * Writes one of the CLI's config files as a new regular file. The CLI (another uid in container
 * mode) can write in its config dir and may have left a symlink at the path; writing through it
 * would let the agent aim the runner's write at any file the runner can reach. So whatever is
 * there is unlinked and the file is created with O_CREAT|O_EXCL|O_NOFOLLOW: if anything (a new
 * symlink, in a race) appears in between, the open fails instead of following it.
 */
export async function writeConfigFile(file: { path: string; content: string; mode?: number }): Promise<void> {
  await mkdir(dirname(file.path), { recursive: true });
  await unlink(file.path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  const mode = file.mode ?? 0o644;
  const fh = await open(
    file.path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    await fh.writeFile(file.content);
    // The umask may have narrowed the mode given to open; through the handle, never the path.
    await fh.chmod(mode);
  } finally {
    await fh.close();
  }
}
