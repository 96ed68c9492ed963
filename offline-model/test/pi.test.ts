// The real pi 0.73.1 (rpc mode) against the offline model.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOfflineModel } from '../src/index.ts';
import type { OfflineModel, RecordedRequest } from '../src/index.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PI = join(ROOT, 'node_modules/@mariozechner/pi-coding-agent/dist/cli.js');
const API_KEY = 'pi-offline-key';
const DEADLINE_MS = 20_000;
/** One SDK attempt per agent attempt, one agent retry, ~no backoff: a retryable error costs two requests. */
const FAST_RETRY = { retry: { enabled: true, maxRetries: 1, baseDelayMs: 1, provider: { maxRetries: 0 } } };

type Event = { type: string; [k: string]: unknown };
type AssistantMessage = {
  role: string;
  content: { type: string; text?: string; thinking?: string }[];
  stopReason: string;
  errorMessage?: string;
};

let model: OfflineModel;
const running: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  model = await startOfflineModel();
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => model.reset());
afterEach(() => {
  for (const child of running.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function startPi(settings: unknown = FAST_RETRY) {
  const root = mkdtempSync(join(tmpdir(), 'offline-pi-'));
  dirs.push(root);
  const agentDir = join(root, 'agent');
  const workspace = join(root, 'ws');
  for (const d of [agentDir, workspace, join(root, 'home')]) mkdirSync(d);
  writeFileSync(
    join(agentDir, 'models.json'),
    JSON.stringify({
      providers: {
        offline: { baseUrl: model.url, api: 'anthropic-messages', apiKey: API_KEY, models: [{ id: 'offline-1' }] },
      },
    }),
  );
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify(settings));
  const args = [
    PI,
    '--mode',
    'rpc',
    '--provider',
    'offline',
    '--model',
    'offline-1',
    '--no-session',
    '--no-extensions',
    '--no-skills',
    '--no-prompt-templates',
    '--no-context-files',
  ];
  const env = {
    PATH: `${join(ROOT, 'node_modules/.bin')}:/usr/local/bin:/usr/bin:/bin`,
    LANG: 'C.UTF-8',
    HOME: join(root, 'home'),
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: '1',
  };
  // process.execPath is the Node 22 running vitest.
  const child = spawn(process.execPath, args, { cwd: workspace, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  running.push(child);

  const events: Event[] = [];
  let stderr = '';
  let buf = '';
  let done = false;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of waiters) w();
  };
  const send = (obj: unknown): void => {
    child.stdin!.write(`${JSON.stringify(obj)}\n`);
  };
  let probes = 0;
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const text = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      if (!text) continue;
      const ev = JSON.parse(text) as Event;
      events.push(ev);
      // pi emits auto_retry_* in the same tick as agent_end; a command sent now is answered after them.
      if (ev.type === 'agent_end') send({ id: `settle-${++probes}`, type: 'get_state' });
    }
    wake();
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      done = true;
      resolve(code);
      wake();
    }),
  );

  const waitFor = (what: string, pred: (evs: Event[]) => boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`timed out waiting for ${what}; stderr: ${stderr}`)),
        DEADLINE_MS,
      );
      const check = (): void => {
        if (pred(events)) finish();
        else if (done) finish(new Error(`pi exited before ${what}; stderr: ${stderr}`));
      };
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (err) reject(err);
        else resolve();
      };
      waiters.add(check);
      check();
    });

  /** Settled: the probe sent at the last agent_end was answered and no retry started after that agent_end. */
  const settled = (evs: Event[]): boolean => {
    const end = evs.findLastIndex((e) => e.type === 'agent_end');
    if (end < 0) return false;
    const after = evs.slice(end + 1);
    const probeAnswered = after.some(
      (e) => e.type === 'response' && typeof e.id === 'string' && e.id.startsWith('settle-'),
    );
    return probeAnswered && !after.some((e) => e.type === 'auto_retry_start' || e.type === 'agent_start');
  };

  return {
    events,
    send,
    waitFor,
    settled,
    exited,
    workspace,
    stderr: () => stderr,
    endInput: () => child.stdin!.end(),
  };
}

/** One prompt; waits until pi has settled (retries included), then closes stdin (pi exits on EOF). */
async function runPi(message: string, settings?: unknown) {
  const p = startPi(settings);
  p.send({ id: 'p1', type: 'prompt', message });
  await p.waitFor('settled run', p.settled);
  p.endInput();
  const code = await p.exited;
  const assistants = p.events
    .filter((e) => e.type === 'message_end' && (e.message as AssistantMessage).role === 'assistant')
    .map((e) => e.message as AssistantMessage);
  return { ...p, code, assistants, last: assistants.at(-1)! };
}

const posts = (): RecordedRequest[] => model.requests().filter((r) => r.path === '/v1/messages');
const textOf = (m: AssistantMessage): string =>
  m.content.flatMap((b) => (b.type === 'text' ? [b.text ?? ''] : [])).join('');

describe('pi 0.73.1 against the offline model', () => {
  it('prints the default answer and sends what we expect on the wire', async () => {
    const run = await runPi('hello from pi');
    expect(run.code).toBe(0);
    expect(run.last.stopReason).toBe('stop');
    expect(textOf(run.last)).toBe('Offline model reply to: hello from pi');
    const deltas = run.events.flatMap((e) => {
      const a = e.type === 'message_update' ? (e.assistantMessageEvent as { type: string; delta?: string }) : undefined;
      return a?.type === 'text_delta' ? [a.delta ?? ''] : [];
    });
    expect(deltas.join('')).toBe('Offline model reply to: hello from pi');

    expect(model.requests()).toHaveLength(1);
    expect(model.requests()[0]).toMatchObject({
      method: 'POST',
      url: '/v1/messages',
      headers: { 'x-api-key': API_KEY, 'user-agent': expect.stringMatching(/^Anthropic\/JS /) },
      body: {
        model: 'offline-1',
        stream: true,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hello from pi' }] }],
      },
      response: { status: 200, source: 'default', mainTurn: true },
    });
  });

  it('prints scripted text and thinking', async () => {
    const run = await runPi('#offline {"thinking":"pi ponders","text":"pi decided"}');
    expect(run.last.content).toEqual([
      expect.objectContaining({ type: 'thinking', thinking: 'pi ponders' }),
      expect.objectContaining({ type: 'text', text: 'pi decided' }),
    ]);
  });

  it('runs a scripted write tool call; the follow-up request carries the tool_result', async () => {
    const run = await runPi('#offline {"tool":"write","path":"made-by-pi.txt","content":"pi wrote this"}');
    expect(readFileSync(join(run.workspace, 'made-by-pi.txt'), 'utf8')).toBe('pi wrote this');
    expect(run.events.find((e) => e.type === 'tool_execution_end')).toMatchObject({
      toolName: 'write',
      isError: false,
    });
    const [first, second, ...more] = posts();
    expect(more).toEqual([]);
    expect(first!.response?.source).toBe('directive');
    const msgs = (second!.body as { messages: { role: string; content: { type: string }[] }[] }).messages;
    expect(msgs.at(-1)!.content).toEqual([
      expect.objectContaining({ type: 'tool_result', tool_use_id: expect.stringMatching(/^toolu_offline_/) }),
    ]);
    expect(textOf(run.last)).toMatch(/^Tool result: Successfully wrote 13 bytes to made-by-pi\.txt/);
  });

  it('reads a file through the read tool and the model quotes it', async () => {
    const p = startPi();
    writeFileSync(join(p.workspace, 'note.txt'), 'contents of the note');
    p.send({ type: 'prompt', message: '#offline {"tool":"read","path":"note.txt"}' });
    await p.waitFor('settled run', p.settled);
    const last = p.events.filter((e) => e.type === 'message_end').at(-1)!.message as AssistantMessage;
    expect(textOf(last)).toBe('Tool result: contents of the note');
    p.endInput();
    await p.exited;
  });

  it('a 401 fails at once with an auth error and is not retried', async () => {
    const run = await runPi('#offline {"error":401}');
    expect(run.last).toMatchObject({
      stopReason: 'error',
      errorMessage: expect.stringMatching(/^401 .*authentication_error/),
    });
    expect(run.events.filter((e) => e.type.startsWith('auto_retry'))).toEqual([]);
    expect(posts()).toHaveLength(1);
  });

  it.each([
    ['429', '{"error":429,"retryAfter":0}'],
    ['529', '{"error":529}'],
  ])('a %s is retried once with the fast settings, then pi gives up', async (status, directive) => {
    const run = await runPi(`#offline ${directive}`);
    const retry = run.events.filter((e) => e.type.startsWith('auto_retry'));
    expect(retry).toEqual([
      expect.objectContaining({ type: 'auto_retry_start', attempt: 1, maxAttempts: 1 }),
      expect.objectContaining({
        type: 'auto_retry_end',
        success: false,
        finalError: expect.stringMatching(new RegExp(`^${status} `)),
      }),
    ]);
    expect(posts().map((r) => r.response?.status)).toEqual([Number(status), Number(status)]);
    // The SDK layer was off: every request is a first attempt.
    expect(posts().map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '0']);
    expect(run.last.stopReason).toBe('error');
  });

  it('without provider.maxRetries the SDK retries twice inside one attempt', async () => {
    const run = await runPi('#offline {"error":529,"retryAfter":0}', { retry: { enabled: false } });
    expect(run.events.filter((e) => e.type.startsWith('auto_retry'))).toEqual([]);
    expect(posts().map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2']);
  });

  it('a cut stream keeps the partial text and ends in a retryable error', async () => {
    model.enqueue({ cut: true, text: 'partial words' }, { text: 'second try' });
    const run = await runPi('go');
    expect(run.assistants[0]).toMatchObject({ stopReason: 'error', errorMessage: 'terminated' });
    expect(textOf(run.assistants[0]!)).toBe('partial words');
    expect(textOf(run.last)).toBe('second try');
  });

  it('an abort lands in the middle of a slow stream', async () => {
    const p = startPi();
    p.send({
      type: 'prompt',
      message: '#offline {"text":"0123456789012345678901234567890123456789","chunks":40,"delayMs":100}',
    });
    await p.waitFor('first text delta', (evs) =>
      evs.some(
        (e) => e.type === 'message_update' && (e.assistantMessageEvent as { type: string }).type === 'text_delta',
      ),
    );
    const sent = Date.now();
    p.send({ id: 'abort-1', type: 'abort' });
    await p.waitFor('abort response', (evs) => evs.some((e) => e.type === 'response' && e.id === 'abort-1'));
    expect(Date.now() - sent).toBeLessThan(2_000);
    const last = p.events.filter((e) => e.type === 'message_end').at(-1)!.message as AssistantMessage;
    expect(last.stopReason).toBe('aborted');
    expect(textOf(last).length).toBeLessThan(40);
    p.endInput();
    await p.exited;
  });
});
