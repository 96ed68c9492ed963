// The real claude 2.1.197 binary against the offline model.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOfflineModel } from '../src/index.ts';
import type { OfflineModel, RecordedRequest } from '../src/index.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLAUDE = join(ROOT, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe');
const API_KEY = 'sk-offline-claude-test';
const DEADLINE_MS = 20_000;

// JSON lines from the CLI; only fields the assertions read are typed.
type Line = { type: string; subtype?: string; [k: string]: unknown };

type Claude = {
  lines: Line[];
  stderr: () => string;
  send: (obj: unknown) => void;
  endInput: () => void;
  waitFor: (what: string, pred: (l: Line) => boolean) => Promise<Line>;
  exited: Promise<number | null>;
  workspace: string;
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
    // The whole group: claude spawns shells for Bash tool calls.
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

function startClaude(opts: { env?: Record<string, string>; args?: string[] } = {}): Claude {
  const root = mkdtempSync(join(tmpdir(), 'offline-claude-'));
  dirs.push(root);
  const workspace = join(root, 'ws');
  for (const d of ['cfg', 'home', 'ws']) mkdirSync(join(root, d));
  const env: Record<string, string> = {
    PATH: `${join(ROOT, 'node_modules/.bin')}:/usr/local/bin:/usr/bin:/bin`,
    LANG: 'C.UTF-8',
    HOME: join(root, 'home'),
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: API_KEY,
    CLAUDE_CONFIG_DIR: join(root, 'cfg'),
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    ...opts.env,
  };
  const args = [
    '-p',
    '--input-format',
    'stream-json',
    '--output-format',
    'stream-json',
    '--verbose',
    '--include-partial-messages',
    ...(opts.args ?? []),
  ];
  const child = spawn(CLAUDE, args, { cwd: workspace, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  running.push(child);

  const lines: Line[] = [];
  let stderr = '';
  let buf = '';
  let done = false;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of waiters) w();
  };
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const text = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (text) lines.push(JSON.parse(text) as Line);
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

  const waitFor = (what: string, pred: (l: Line) => boolean): Promise<Line> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`timed out waiting for ${what}; stderr: ${stderr}`)),
        DEADLINE_MS,
      );
      const check = (): void => {
        const hit = lines.find(pred);
        if (hit) finish(undefined, hit);
        else if (done) finish(new Error(`claude exited before ${what}; stderr: ${stderr}`));
      };
      const finish = (err?: Error, hit?: Line): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (err) reject(err);
        else resolve(hit!);
      };
      waiters.add(check);
      check();
    });

  return {
    lines,
    stderr: () => stderr,
    send: (obj) => child.stdin!.write(`${JSON.stringify(obj)}\n`),
    endInput: () => child.stdin!.end(),
    waitFor,
    exited,
    workspace,
  };
}

/** One turn: send the prompt, close stdin (claude finishes the turn and exits), wait for exit. */
async function runClaude(prompt: string, opts: { env?: Record<string, string>; args?: string[] } = {}) {
  const c = startClaude(opts);
  c.send({ type: 'user', message: { role: 'user', content: prompt } });
  c.endInput();
  const result = await c.waitFor('result', (l) => l.type === 'result');
  const code = await Promise.race([
    c.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('claude did not exit')), DEADLINE_MS)),
  ]);
  return { ...c, result, code };
}

const turns = (): RecordedRequest[] => model.requests().filter((r) => r.path === '/v1/messages');
const streamDeltas = (lines: Line[], type: string): string[] =>
  lines.flatMap((l) => {
    const ev = l.type === 'stream_event' ? (l.event as { type: string; delta?: Record<string, string> }) : undefined;
    return ev?.type === 'content_block_delta' && ev.delta?.type === type
      ? [ev.delta.text ?? ev.delta.thinking ?? '']
      : [];
  });
type Body = { model: string; stream?: boolean; messages: { role: string; content: unknown }[] };
const lastUser = (r: RecordedRequest): unknown =>
  (r.body as Body).messages.filter((m) => m.role === 'user').at(-1)?.content;

describe('claude 2.1.197 against the offline model', () => {
  it('prints the default answer and sends what we expect on the wire', async () => {
    const run = await runClaude('hello offline world');
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      subtype: 'success',
      is_error: false,
      result: 'Offline model reply to: hello offline world',
    });
    expect(streamDeltas(run.lines, 'text_delta').join('')).toBe('Offline model reply to: hello offline world');

    const [head, ...rest] = model.requests();
    expect(head).toMatchObject({ method: 'HEAD', path: '/' });
    expect(rest).toHaveLength(1);
    const req = rest[0]!;
    expect(req).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      url: '/v1/messages?beta=true',
      headers: { 'x-api-key': API_KEY, 'user-agent': expect.stringMatching(/^claude-cli\/2\.1\.197 /) },
      body: { stream: true, model: expect.any(String) },
      response: { status: 200, source: 'default', mainTurn: true },
    });
    expect(JSON.stringify(lastUser(req))).toContain('hello offline world');
    expect((req.body as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['Bash', 'Read', 'Write']),
    );
  });

  it('prints scripted text from a directive', async () => {
    const run = await runClaude('say it\n#offline {"text":"scripted answer 42"}');
    expect(run.result).toMatchObject({ is_error: false, result: 'scripted answer 42' });
  });

  it('shows thinking before the text', async () => {
    const run = await runClaude('#offline {"thinking":"weighing options","text":"decided"}');
    expect(streamDeltas(run.lines, 'thinking_delta').join('')).toBe('weighing options');
    const blocks = run.lines
      .filter((l) => l.type === 'assistant')
      .flatMap((l) => (l.message as { content: { type: string; thinking?: string }[] }).content);
    expect(blocks[0]).toMatchObject({ type: 'thinking', thinking: 'weighing options' });
    expect(run.result).toMatchObject({ result: 'decided' });
  });

  it('runs a scripted Write tool call; the follow-up request carries the tool_result', async () => {
    const run = await runClaude(
      '#offline {"tool":"write","path":"made-by-claude.txt","content":"written offline\\n"}',
      {
        args: ['--allowedTools', 'Write'],
      },
    );
    expect(run.code).toBe(0);
    expect(readFileSync(join(run.workspace, 'made-by-claude.txt'), 'utf8')).toBe('written offline\n');

    const [first, second, ...more] = turns();
    expect(more).toEqual([]);
    expect(first!.response?.source).toBe('directive');
    expect(second!.response?.source).toBe('tool-result');
    const result = (lastUser(second!) as { type: string; tool_use_id?: string; is_error?: boolean }[]).find(
      (b) => b.type === 'tool_result',
    );
    expect(result).toMatchObject({ tool_use_id: expect.stringMatching(/^toolu_offline_/) });
    expect(result?.is_error).not.toBe(true);
    expect(run.result.result).toMatch(/^Tool result: File created successfully/);
  });

  it('runs a scripted shell command and the model sees its output', async () => {
    const run = await runClaude('#offline {"tool":"shell","command":"printf shell-%s ok"}', {
      args: ['--allowedTools', 'Bash'],
    });
    expect(run.result).toMatchObject({ is_error: false, result: 'Tool result: shell-ok' });
  });

  it('a 401 fails with an auth error', async () => {
    const run = await runClaude('#offline {"error":401}');
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      is_error: true,
      api_error_status: 401,
      result: expect.stringMatching(/Invalid API key/),
    });
    expect(turns()).toHaveLength(1);
  });

  it.each([
    ['429', '{"error":429,"retryAfter":0}', 'rate_limit'],
    ['529', '{"error":529}', 'overloaded'],
  ])('a %s is retried once (CLAUDE_CODE_MAX_RETRIES=1), then claude gives up', async (status, directive, label) => {
    const run = await runClaude(`#offline ${directive}`, { env: { CLAUDE_CODE_MAX_RETRIES: '1' } });
    expect(run.code).toBe(1);
    const retries = run.lines.filter((l) => l.subtype === 'api_retry');
    expect(retries).toEqual([
      expect.objectContaining({ attempt: 1, max_retries: 1, error_status: Number(status), error: label }),
    ]);
    expect(turns().map((r) => r.response?.status)).toEqual([Number(status), Number(status)]);
    expect(run.result).toMatchObject({ is_error: true, api_error_status: Number(status) });
  });

  it('a cut stream makes claude fall back to a non-streaming request, which gets the next queued reply', async () => {
    model.enqueue({ cut: true }, { text: 'recovered without streaming' });
    const run = await runClaude('go');
    expect(run.result).toMatchObject({ is_error: false, result: 'recovered without streaming' });
    expect(turns().map((r) => (r.body as Body).stream === true)).toEqual([true, false]);
  });

  it('an interrupt lands in the middle of a slow stream', async () => {
    const c = startClaude();
    c.send({
      type: 'user',
      message: {
        role: 'user',
        content: '#offline {"text":"0123456789012345678901234567890123456789","chunks":40,"delayMs":100}',
      },
    });
    await c.waitFor(
      'first text delta',
      (l) => l.type === 'stream_event' && (l.event as { type: string }).type === 'content_block_delta',
    );
    const sent = Date.now();
    c.send({ type: 'control_request', request_id: 'interrupt-1', request: { subtype: 'interrupt' } });
    const result = await c.waitFor('result', (l) => l.type === 'result');
    expect(result).toMatchObject({ subtype: 'error_during_execution', is_error: true });
    // The full stream would take ~4 s.
    expect(Date.now() - sent).toBeLessThan(2_000);
    expect(streamDeltas(c.lines, 'text_delta').join('').length).toBeLessThan(40);
    c.endInput();
    await c.exited;
  });

  it("claude's session-title side request neither eats the queue nor sees directives", async () => {
    model.enqueue({ text: 'queued answer' });
    const run = await runClaude('#offline {"error":500}', { env: { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '' } });
    expect(run.result).toMatchObject({ is_error: false, result: 'queued answer' });
    const posts = turns();
    const side = posts.filter((r) => r.response?.source === 'side');
    expect(side).toHaveLength(1);
    expect(side[0]!.body).toMatchObject({
      stream: true,
      tools: [],
      output_config: { format: { type: 'json_schema' } },
    });
    expect(posts.filter((r) => r.response?.mainTurn)).toHaveLength(1);
  });
});
