// What every end-to-end test file (test/e2e) needs around its tests: the running stack and an admin
// logged in to it, the service log's tail appended to a failing test's message, and the SSE streams
// and sessions a test opened, closed and deleted afterwards (a stream left open keeps the edge busy;
// a live runner per session counts against maxLiveRunnersPerUser).
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Stack, StackOptions } from '../../scripts/start.ts';
import { Api, type SseEvent, type SseStream, until } from './sse-client.ts';
import { startTestStack, type TestStack } from './test-stack.ts';

/** A prompt carrying an `#offline` script: the offline model answers with the script, not by default. */
export function offline(script: Record<string, unknown>, prefix = ''): string {
  return `${prefix}\n#offline ${JSON.stringify(script)}`;
}

/** A runner task's JSON log lines (the host writes each task's stderr to `logPath`). */
export function runnerLog(task: { logPath: string }): Array<{ msg?: string; resume?: boolean }> {
  return readFileSync(task.logPath, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; resume?: boolean });
}

/** What the stack's offline model was asked so far, oldest first (its control API). */
export async function offlineRequests(
  stack: Pick<Stack, 'offlineModelUrl' | 'offlineControlToken'>,
): Promise<Array<{ body: unknown; response?: { mainTurn?: boolean } }>> {
  const r = await fetch(`${stack.offlineModelUrl}/_offline/requests`, {
    headers: { authorization: `Bearer ${stack.offlineControlToken}` },
  });
  const j = (await r.json()) as unknown;
  return (Array.isArray(j) ? j : (j as { requests: unknown[] }).requests) as Array<{
    body: unknown;
    response?: { mainTurn?: boolean };
  }>;
}

/** The body of the offline model's first request that mentions `marker`, as JSON text ('""' if none). */
export async function requestWith(
  stack: Pick<Stack, 'offlineModelUrl' | 'offlineControlToken'>,
  marker: string,
): Promise<string> {
  const hit = (await offlineRequests(stack)).find((q) => JSON.stringify(q.body).includes(marker));
  return JSON.stringify(hit?.body ?? '');
}

/** Waits for the turn's end and for the workspace.saved that follows it (the turn's files are durable then). */
export async function turnSaved(
  s: SseStream,
  messageId: string,
  timeoutMs: number,
): Promise<{ done: SseEvent; saved: SseEvent }> {
  const done = await s.turnDone(messageId, timeoutMs);
  const at = s.events.indexOf(done);
  const saved = await s.waitFor(
    `workspace.saved after ${messageId}`,
    (e, i) => i > at && e.event === 'workspace.saved',
    timeoutMs,
  );
  return { done, saved };
}

/** What the turn's tool calls returned, one result a line. */
export function toolOutput(s: SseStream, messageId: string): string {
  return s
    .ofMessage(messageId)
    .filter((e) => e.event === 'tool.result')
    .map((e) => String(e.data.output))
    .join('\n');
}

/** Posts a message to the session; the edge must accept it (202). Its messageId. */
export async function sendMessage(api: Api, sessionId: string, text: string): Promise<string> {
  const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${sessionId}/messages`, { text });
  expect(r.status, r.text).toBe(202);
  return r.body.messageId;
}

/** The session's workspace paths, as the Files API lists them. */
export async function listing(api: Api, sessionId: string): Promise<string[]> {
  const r = await api.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${sessionId}/files`);
  expect(r.status, r.text).toBe(200);
  return r.body.files.map((f) => f.path);
}

/** The session's runner task once it runs with a live process; `not`: a task other than that one (a replacement). */
export function liveTask(stack: Stack, sessionId: string, not?: string) {
  return until(
    `a running runner for ${sessionId}`,
    async () =>
      (await stack.runners()).find(
        (t) => t.sessionId === sessionId && t.lastStatus === 'RUNNING' && t.pid !== null && t.taskArn !== not,
      ),
    60_000,
  );
}

export class E2eHarness {
  /** Streams still open; closed by closeStreams() and stop(). */
  readonly streams = new Set<SseStream>();
  /** Sessions to delete in deleteSessions(). */
  readonly sessions: string[] = [];
  #running: TestStack | undefined;
  #admin: Api | undefined;
  readonly #logLines: number;

  /** `logLines`: how many of the last service lines a failing test's message gets. */
  constructor(opts: { logLines?: number } = {}) {
    this.#logLines = opts.logLines ?? 80;
  }

  async start(
    name: string,
    opts: Partial<StackOptions> = {},
  ): Promise<{ running: TestStack; stack: Stack; admin: Api }> {
    const running = await startTestStack(name, opts);
    this.#running = running;
    const { stack } = running;
    const admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
    this.#admin = admin;
    return { running, stack, admin };
  }

  /** Runs the test; if it throws, the error's message ends with the last service lines. */
  dumpOnFail = <T>(f: () => Promise<T>): (() => Promise<T>) => {
    return async () => {
      try {
        return await f();
      } catch (err) {
        const tail = this.#running?.log.slice(-this.#logLines).join('\n') ?? '(no stack)';
        if (err instanceof Error) err.message += `\n--- last service lines:\n${tail}`;
        throw err;
      }
    };
  };

  /** Remembers an opened event stream (closed after the test) and checks it opened. */
  track = async (s: Promise<SseStream>): Promise<SseStream> => {
    const stream = await s;
    this.streams.add(stream);
    expect(stream.status).toBe(200);
    return stream;
  };

  async closeStreams(): Promise<void> {
    for (const s of this.streams) await s.close();
    this.streams.clear();
  }

  /** Deletes the remembered sessions, so their runners stop; the status is not checked (some already went). */
  async deleteSessions(): Promise<void> {
    const admin = this.#admin;
    for (const id of this.sessions.splice(0)) await admin?.call('DELETE', `/api/sessions/${id}`);
  }

  /** Closes what is still open and stops the stack (a no-op for a stack that never started). */
  async stop(): Promise<void> {
    await this.closeStreams();
    await this.#running?.stop();
  }
}
