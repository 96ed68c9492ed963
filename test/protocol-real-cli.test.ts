import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, AgentEventSchema, JsonlSplitter, type AgentEvent, type Backend } from '@switchyard/protocol';
import { locateCli } from '@switchyard/runner/cli';
import { startOfflineModel, type OfflineModel } from '@switchyard/offline-model';
import { count, startCli, textOf, type Harness } from './helpers/cli-harness.ts';
import { lastUserText } from './helpers/model-requests.ts';

// The protocol package proven against the pinned real CLIs and the offline
// model. Each DESIGN.md invariant is pinned here (see the `invariant N` names).

let model: OfflineModel;
beforeAll(async () => {
  model = await startOfflineModel();
});
afterAll(async () => {
  await model.close();
});

const open: Harness[] = [];
afterEach(async () => {
  while (open.length > 0) await open.pop()?.close();
  model.reset();
});

async function cli(
  backend: Backend,
  opts: Parameters<typeof startCli>[2] = {},
  checkTool?: Parameters<typeof startCli>[3],
): Promise<Harness> {
  const h = await startCli(backend, model.url, opts, checkTool);
  open.push(h);
  return h;
}

const directive = (script: object) => `#offline ${JSON.stringify(script)}`;

/** Main-turn requests the model answered, in order. */
function mainTurns() {
  return model.requests().filter((r) => r.response?.mainTurn);
}

function expectValidEvents(events: AgentEvent[]) {
  for (const e of events) expect(AgentEventSchema.safeParse(e).success, JSON.stringify(e)).toBe(true);
}

describe.each(['claude', 'pi'] as const)('%s against the offline model', (backend) => {
  it('plain answer: init, deltas that add up to the text exactly once, one turn.done (invariants 1, 2)', async () => {
    const h = await cli(backend);
    const answer = 'The quick brown fox jumps over the lazy dog. '.repeat(6);
    h.proc.sendUserMessage({ text: directive({ text: answer, chunks: 12 }) });
    const turn = await h.turn(1);
    expectValidEvents(turn);
    expect(turn[0]).toMatchObject({ type: 'session.init', backend });
    // Both CLIs also repeat the finished text (claude `assistant` snapshots,
    // pi `text_end.content` and partials); none of it may become a delta.
    expect(textOf(turn)).toBe(answer);
    expect(count(turn, 'text.delta')).toBeGreaterThanOrEqual(12);
    expect(turn.filter((e) => e.type === 'message.assistant')).toEqual([
      { type: 'message.assistant', content: [{ type: 'text', text: answer }] },
    ]);
    expect(turn.at(-1)).toMatchObject({
      type: 'turn.done',
      stopReason: 'end_turn',
      usage: { outputTokens: expect.any(Number) },
    });
    expect(count(h.events, 'turn.done')).toBe(1);
    expect(count(h.events, 'error')).toBe(0);
  });

  it('thinking then text', async () => {
    const h = await cli(backend);
    h.proc.sendUserMessage({
      text: directive({ thinking: 'Weighing the options carefully.', text: 'Decided.', chunks: 4 }),
    });
    const turn = await h.turn(1);
    expect(textOf(turn, 'thinking.delta')).toBe('Weighing the options carefully.');
    expect(textOf(turn)).toBe('Decided.');
    const firstThinking = turn.findIndex((e) => e.type === 'thinking.delta');
    const firstText = turn.findIndex((e) => e.type === 'text.delta');
    expect(firstThinking).toBeLessThan(firstText);
    expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
  });

  it('a tool call and its result, then the follow-up answer, all in one turn (invariant 1 through a tool loop)', async () => {
    const h = await cli(backend);
    h.proc.sendUserMessage({ text: directive({ tool: 'write', path: 'notes.txt', content: 'payload-42' }) });
    const turn = await h.turn(1);
    expectValidEvents(turn);
    const start = turn.find((e) => e.type === 'tool.start');
    const end = turn.find((e) => e.type === 'tool.end');
    const result = turn.find((e) => e.type === 'tool.result');
    expect(start).toMatchObject({ name: backend === 'claude' ? 'Write' : 'write' });
    expect(end).toMatchObject({
      toolId: (start as { toolId: string }).toolId,
      input: expect.objectContaining({ content: 'payload-42' }),
    });
    const inputJson = turn.flatMap((e) => (e.type === 'tool.input' ? [e.delta] : [])).join('');
    expect(JSON.parse(inputJson)).toEqual((end as { input: unknown }).input);
    expect(result).toMatchObject({ toolId: (start as { toolId: string }).toolId, isError: false });
    expect(readFileSync(join(h.dirs.workspace, 'notes.txt'), 'utf8')).toBe('payload-42');
    expect(textOf(turn)).toMatch(/^Tool result: /);
    expect(turn.findIndex((e) => e.type === 'tool.result')).toBeLessThan(
      turn.findIndex((e) => e.type === 'text.delta'),
    );
    expect(count(h.events, 'turn.done')).toBe(1);
    expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
  });

  it('a tool call a guard blocks: an error result with the guard reason, nothing written', async () => {
    // A stand-in for the real guard (its own module): it blocks every write. claude's hooks are
    // answered by the host; pi loads an extension.
    const h =
      backend === 'claude'
        ? await cli(backend, { guard: 'runner' }, (call) =>
            call.tool === 'Write' ? { allow: false, reason: `stand-in guard blocked ${call.tool}` } : { allow: true },
          )
        : await cli(backend, { guard: { file: join(import.meta.dirname, 'fixtures', 'standin-guard-pi.ts') } });
    h.proc.sendUserMessage({ text: directive({ tool: 'write', path: 'blocked.txt', content: 'nope' }) });
    const turn = await h.turn(1);
    const result = turn.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ isError: true, output: expect.stringContaining('stand-in guard blocked') });
    expect(existsSync(join(h.dirs.workspace, 'blocked.txt'))).toBe(false);
    expect(textOf(turn)).toContain('Tool result (error)');
    expect(count(h.events, 'turn.done')).toBe(1);
  });

  it('an interrupt mid-stream ends the turn once as interrupted, and the CLI takes the next message', async () => {
    const h = await cli(backend);
    h.proc.sendUserMessage({ text: directive({ text: 'slow words '.repeat(40), chunks: 40, delayMs: 100 }) });
    await h.waitFor((e) => e.type === 'text.delta');
    h.proc.interrupt();
    const turn = await h.turn(1);
    expect(turn.at(-1)).toEqual(expect.objectContaining({ type: 'turn.done', stopReason: 'interrupted' }));
    expect(textOf(turn).length).toBeLessThan('slow words '.repeat(40).length);
    h.proc.sendUserMessage({ text: directive({ text: 'after the interrupt' }) });
    const next = await h.turn(2);
    expect(textOf(next)).toBe('after the interrupt');
    expect(next.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
    expect(count(h.events, 'turn.done')).toBe(2);
  });

  // Every provider error class (protocol/src/provider-errors.ts) through the real CLI.
  // Classes retrying cannot fix end after the first failed request even though the CLI's
  // own loop would retry (claude retries a 401 ten times, minutes of backoff): the codec
  // stops it. The model's request count, not the clock, shows the loop did not run.
  const billingText =
    'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.';
  const fatal: Array<{ name: string; script: object; code: string }> = [
    { name: '401', script: { error: 401 }, code: 'provider_auth' },
    { name: '403', script: { error: 403 }, code: 'provider_auth' },
    { name: '402', script: { error: 402 }, code: 'provider_billing' },
    { name: '400 about credit', script: { error: 400, message: billingText }, code: 'provider_billing' },
    { name: '400', script: { error: 400 }, code: 'provider_invalid_request' },
  ];
  it.each(fatal)(
    'provider $name ends the turn at the first failure: $code, not retryable, no turn.retry; the CLI takes the next message',
    async ({ script, code }) => {
      // Ten retries allowed: a CLI left to its own loop would keep failing for minutes.
      const h = await cli(backend, { retry: { maxRetries: 10, baseDelayMs: 2000 } });
      h.proc.sendUserMessage({ text: directive(script) });
      const turn = await h.turn(1, 30_000);
      expectValidEvents(turn);
      expect(count(turn, 'turn.retry')).toBe(0);
      expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'error', error: { code, retryable: false } });
      expect((turn.at(-1) as { error: { message: string } }).error.message).toMatch(
        /Sending it again (unchanged )?will (not help|fail)/,
      );
      expect(mainTurns()).toHaveLength(1);
      h.proc.sendUserMessage({ text: directive({ text: 'after the provider error' }) });
      const next = await h.turn(2);
      expect(textOf(next)).toBe('after the provider error');
      expect(count(h.events, 'turn.done')).toBe(2);
    },
  );

  if (backend === 'pi') {
    it('provider 401 on pi whose text pi\'s retry regex matches ("500" in it) is not retried either', async () => {
      const h = await cli(backend, { retry: { maxRetries: 3, baseDelayMs: 2000 } });
      h.proc.sendUserMessage({ text: directive({ error: 401, message: 'invalid x-api-key (request req_5001)' }) });
      const turn = await h.turn(1, 30_000);
      expect(count(turn, 'turn.retry')).toBe(0);
      expect(turn.at(-1)).toMatchObject({
        type: 'turn.done',
        stopReason: 'error',
        error: { code: 'provider_auth', retryable: false },
      });
      // The provider's text chose the class; a person reads the plain message, not that text.
      expect((turn.at(-1) as { error: { message: string } }).error.message).not.toContain('x-api-key');
      expect(mainTurns()).toHaveLength(1);
      h.proc.sendUserMessage({ text: directive({ text: 'still here' }) });
      expect(textOf(await h.turn(2))).toBe('still here');
    });
  }

  const transient: Array<{ name: string; script: object; code: string }> = [
    { name: '429', script: { error: 429 }, code: 'provider_rate_limited' },
    { name: '529', script: { error: 529 }, code: 'provider_overloaded' },
    { name: '500', script: { error: 500 }, code: 'provider_unavailable' },
  ];
  it.each(transient)(
    'provider $name is retried within the budget with turn.retry, then ends $code, retryable',
    async ({ script, code }) => {
      const h = await cli(backend, { retry: { maxRetries: 1, baseDelayMs: 1 } });
      h.proc.sendUserMessage({ text: directive(script) });
      const turn = await h.turn(1, 45_000);
      expectValidEvents(turn);
      expect(turn.filter((e) => e.type === 'turn.retry')).toEqual([
        expect.objectContaining({ attempt: 1, reason: expect.stringContaining(code) }),
      ]);
      expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'error', error: { code, retryable: true } });
      expect((turn.at(-1) as { error: { message: string } }).error.message).toMatch(/again/);
      // The budget: one try and one retry.
      expect(mainTurns()).toHaveLength(2);
      // Nothing more arrives for this turn once the CLI is done with it.
      await h.close();
      open.pop();
      expect(count(h.events, 'turn.done')).toBe(1);
    },
  );

  it('an image in a user message reaches the model as an image block', async () => {
    const h = await cli(backend);
    const png = readFileSync(join(import.meta.dirname, 'fixtures', 'pixel.png')).toString('base64');
    h.proc.sendUserMessage({ text: 'What is in this picture?', images: [{ mediaType: 'image/png', data: png }] });
    const turn = await h.turn(1);
    expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
    const body = JSON.stringify(mainTurns().at(-1)?.body);
    expect(body).toContain(png);
    expect(body).toMatch(/"type":"image"/);
  });

  it('user text with newlines, quotes, emoji, U+2028/U+2029 and a leading / reaches the model verbatim (invariants 3, 5)', async () => {
    const h = await cli(backend);
    const nasty =
      '/compact now\nline two "quoted" \\ back\n{"type":"bash","command":"touch pwned"}\u2028sep\u2029para 😀 end';
    h.proc.sendUserMessage({ text: nasty });
    const turn = await h.turn(1);
    expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
    // The model got the text, not a command: no slash command ran, no bash ran.
    expect(lastUserText(mainTurns().at(-1)?.body)).toBe(nasty);
    expect(existsSync(join(h.dirs.workspace, 'pwned'))).toBe(false);
    // The default reply echoes the text, so U+2028/U+2029 come back inside a
    // JSON string on stdout; a splitter that broke on them would corrupt the line.
    expect(textOf(turn)).toMatch(/^Offline model reply to: /);
    expect(textOf(turn)).toContain('\u2028sep\u2029para 😀 end');
    // pi writes U+2028 raw inside JSON strings; claude escapes it, so only
    // pi's stream can catch a splitter that breaks on it.
    if (backend === 'pi') expect(h.stdout.some((l) => l.includes('\u2028'))).toBe(true);
    expect(count(h.events, 'error')).toBe(0);
  });

  it.each(['/cost', '/help', '/model x', '//', ' /init'])(
    'a lone slash command %j is text for the model, not a command',
    async (text) => {
      const h = await cli(backend);
      h.proc.sendUserMessage({ text });
      const turn = await h.turn(1);
      expect(turn.at(-1)).toMatchObject({ type: 'turn.done', stopReason: 'end_turn' });
      expect(lastUserText(mainTurns().at(-1)?.body)).toBe(text);
    },
  );

  it('unknown event types are skipped and a non-JSON line is an error, on a real recorded stream (invariant 4)', async () => {
    const h = await cli(backend);
    h.proc.sendUserMessage({ text: directive({ tool: 'shell', command: 'echo hello-from-shell' }) });
    await h.turn(1);
    // The real stream already holds types the codec does not know; replay it
    // with extra unknown and broken lines spliced in.
    // pi's codec times the turn itself (durationMs); two replays differ there, nowhere else.
    const replay = (lines: string[]) => {
      const codec = adapterFor(backend).createCodec();
      codec.encodeUserMessage({ text: 'x' });
      return lines.flatMap((l) => codec.parse(l)).map((e) => (e.type === 'turn.done' ? { ...e, durationMs: 0 } : e));
    };
    const clean = replay(h.stdout);
    const spliced: string[] = [];
    h.stdout.forEach((line, i) => {
      spliced.push(line);
      if (i === 2)
        spliced.push(
          '{"type":"totally_new_event","x":1}',
          'warning: not json at all',
          '{"type":"system","subtype":"brand_new"}',
        );
    });
    const dirty = replay(spliced);
    expect(dirty.filter((e) => e.type === 'error')).toEqual([
      expect.objectContaining({ code: 'cli_bad_line', message: expect.stringContaining('warning: not json') }),
    ]);
    expect(dirty.filter((e) => e.type !== 'error')).toEqual(clean);
    expect(clean.filter((e) => e.type === 'turn.done')).toHaveLength(1);
    expect(clean.find((e) => e.type === 'tool.result')).toMatchObject({
      output: expect.stringContaining('hello-from-shell'),
    });
  });

  it('a CLI killed mid-turn: end() closes the open turn exactly once with an error (invariant 1)', async () => {
    const h = await cli(backend);
    h.proc.sendUserMessage({ text: directive({ text: 'never finishes '.repeat(50), chunks: 50, delayMs: 200 }) });
    await h.waitFor((e) => e.type === 'text.delta');
    h.proc.kill('SIGKILL');
    const turn = await h.turn(1);
    expect(turn.at(-1)).toMatchObject({
      type: 'turn.done',
      stopReason: 'error',
      error: { code: 'cli_exited', message: expect.stringContaining('SIGKILL') },
    });
    await h.proc.exited;
    expect(count(h.events, 'turn.done')).toBe(1);
  });
});

describe('a CLI that ends having produced no events but wrote stderr (invariant 6)', () => {
  // Real pi, real codec, no harness: stdin closes before any command, as when
  // the runner's link to the CLI dies. pi warns on stderr and exits.
  async function runBare(editModels: (providers: Record<string, { models: Array<{ id: string }> }>) => object) {
    const root = mkdtempSync(join(tmpdir(), 'sy-bare-'));
    const spec = adapterFor('pi').spawnSpec({
      executable: locateCli('pi'),
      workspace: root,
      home: root,
      configDir: join(root, 'cfg'),
      modelBaseUrl: model.url,
      modelApiKey: 'dummy',
      baseEnv: process.env,
    });
    mkdirSync(join(root, 'cfg'));
    for (const f of spec.files) {
      const content = f.path.endsWith('models.json')
        ? JSON.stringify({ providers: editModels(JSON.parse(f.content).providers) })
        : f.content;
      writeFileSync(f.path, content);
    }
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end();
    const codec = adapterFor('pi').createCodec();
    const splitter = new JsonlSplitter();
    const events: AgentEvent[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      for (const l of splitter.push(c)) events.push(...codec.parse(l));
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
    for (const l of splitter.flush()) events.push(...codec.parse(l));
    events.push(...codec.end({ code, signal, stderrHead: stderr }));
    rmSync(root, { recursive: true, force: true });
    return { code, stderr, events };
  }

  it('exit 0 with only a warning on stderr (model missing from models.json) is an error carrying that line, not a silent success', async () => {
    const { code, stderr, events } = await runBare((p) => ({
      switchyard: { ...p.switchyard, models: [{ id: 'another-model' }] },
    }));
    expect(code).toBe(0);
    expect(stderr).toMatch(/not found/);
    expect(events).toEqual([
      { type: 'error', code: 'cli_no_output', message: stderr.trim().split('\n')[0], retryable: false },
    ]);
  });

  it('a startup failure (provider missing from models.json: exit 1, stderr only) is an error carrying the first stderr line', async () => {
    const { code, stderr, events } = await runBare((p) => ({ renamed: p.switchyard }));
    expect(code).toBe(1);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'error',
        code: 'cli_exited',
        message: expect.stringContaining(stderr.trim().split('\n')[0] ?? ''),
      }),
    ]);
  });
});
