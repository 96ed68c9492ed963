import { describe, expect, it } from 'vitest';
import type { MessagesRequest } from '../src/request.ts';
import { isMainTurn, MessagesRequestSchema, userText, workingDirectory } from '../src/request.ts';
import type { MessageReply, Reply, ReplyStep, Script } from '../src/script.ts';
import {
  decideReply,
  exampleFor,
  findDirective,
  ScriptSchema,
  SIDE_REPLY_TEXT,
  THINKING_SIGNATURE,
} from '../src/script.ts';
import { mapTool } from '../src/tools.ts';

// Tool definitions shaped like the ones the pinned CLIs send (names and properties copied from recorded requests).
const claudeTools = [
  {
    name: 'Bash',
    input_schema: { type: 'object', properties: { command: {}, timeout: {}, description: {} }, required: ['command'] },
  },
  {
    name: 'Read',
    input_schema: { type: 'object', properties: { file_path: {}, offset: {}, limit: {} }, required: ['file_path'] },
  },
  {
    name: 'Write',
    input_schema: { type: 'object', properties: { file_path: {}, content: {} }, required: ['file_path', 'content'] },
  },
  { name: 'Edit', input_schema: { type: 'object', properties: { file_path: {}, old_string: {}, new_string: {} } } },
];
const piTools = [
  { name: 'read', input_schema: { type: 'object', properties: { path: {}, offset: {}, limit: {} } } },
  { name: 'bash', input_schema: { type: 'object', properties: { command: {}, timeout: {} } } },
  { name: 'edit', input_schema: { type: 'object', properties: { path: {}, edits: {} } } },
  { name: 'write', input_schema: { type: 'object', properties: { path: {}, content: {} } } },
  { name: 'ls', input_schema: { type: 'object', properties: { path: {}, limit: {} } } },
];
const claudeSystem = [
  { type: 'text', text: 'You are Claude.\n# Environment\n - Primary working directory: /work/ws\n - Platform: linux' },
];
const reminder = {
  type: 'text',
  text: '<system-reminder>\nToday is a day. #offline {"error":500} is not at line start\n</system-reminder>\n',
};

function req(fields: Record<string, unknown>): MessagesRequest {
  return MessagesRequestSchema.parse({ model: 'm', max_tokens: 100, stream: true, ...fields });
}

/** A claude-shaped main turn: reminder block, typed text, then claude's trailing role:"system" message. */
function claudeTurn(text: string, extra: Record<string, unknown> = {}): MessagesRequest {
  return req({
    system: claudeSystem,
    tools: claudeTools,
    messages: [
      { role: 'user', content: [reminder, { type: 'text', text }] },
      { role: 'system', content: 'Available agent types: #offline {"error":401}' },
    ],
    ...extra,
  });
}

function piTurn(text: string): MessagesRequest {
  return req({
    system: [{ type: 'text', text: 'You are pi.\nCurrent working directory: /tmp/pi-ws' }],
    tools: piTools,
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
  });
}

function asMessage(r: Reply): MessageReply {
  if (r.kind !== 'message') throw new Error(`expected a message reply, got ${JSON.stringify(r)}`);
  return r;
}
const texts = (r: Reply): string[] => asMessage(r).steps.flatMap((s) => (s.type === 'text' ? [s.text] : []));
const toolUse = (r: Reply): Extract<ReplyStep, { type: 'tool_use' }> | undefined =>
  asMessage(r).steps.find((s): s is Extract<ReplyStep, { type: 'tool_use' }> => s.type === 'tool_use');

describe('request schema', () => {
  it('passes unknown fields through and accepts string or block content', () => {
    const r = req({ messages: [{ role: 'user', content: 'hi', extra: 1 }], context_management: { edits: [] } });
    expect(r.context_management).toEqual({ edits: [] });
    expect(r.messages[0]).toMatchObject({ extra: 1 });
  });
  it('rejects a body without messages', () => {
    expect(MessagesRequestSchema.safeParse({ model: 'm' }).success).toBe(false);
  });
});

describe('isMainTurn', () => {
  it('counts requests with tools, and streaming requests without structured output', () => {
    expect(isMainTurn(req({ messages: [], tools: claudeTools, stream: false }))).toBe(true);
    expect(isMainTurn(req({ messages: [], stream: true }))).toBe(true);
  });
  it("treats claude's title request and tool-less non-streaming requests as side requests", () => {
    const title = req({
      messages: [{ role: 'user', content: '<session>\nhi\n</session>' }],
      tools: [],
      stream: true,
      output_config: {
        format: {
          type: 'json_schema',
          schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
        },
      },
    });
    expect(isMainTurn(title)).toBe(false);
    expect(isMainTurn(req({ messages: [], stream: false, max_tokens: 1 }))).toBe(false);
  });
});

describe('directives', () => {
  it('finds a directive in the last user message, skipping trailing system messages', () => {
    expect(findDirective(claudeTurn('please\n#offline {"text":"scripted"}'))).toEqual({
      ok: true,
      script: { text: 'scripted' },
    });
  });
  it('the last directive line wins, searching reminder blocks too', () => {
    const withReminder = (typed: string): MessagesRequest =>
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>\n#offline {"text":"from reminder"}\n</system-reminder>' },
              { type: 'text', text: typed },
            ],
          },
        ],
      });
    expect(findDirective(withReminder('#offline {"text":"a"}\n#offline {"text":"mine"}'))).toEqual({
      ok: true,
      script: { text: 'mine' },
    });
    expect(findDirective(withReminder('no directive'))).toEqual({ ok: true, script: { text: 'from reminder' } });
  });
  it('a directive must start its line', () => {
    expect(findDirective(claudeTurn('say #offline {"text":"x"}'))).toBeUndefined();
  });
  it('ignores directives in earlier user messages', () => {
    const r = req({
      messages: [
        { role: 'user', content: '#offline {"error":500}' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'next' },
      ],
    });
    expect(findDirective(r)).toBeUndefined();
    expect(texts(decideReply(r, { seq: 1 }))).toEqual(['Offline model reply to: next']);
  });
  it('reports bad JSON and unknown keys instead of guessing', () => {
    expect(findDirective(piTurn('#offline {nope'))).toMatchObject({ ok: false });
    expect(findDirective(piTurn('#offline {"txt":"typo"}'))).toMatchObject({ ok: false });
    const reply = decideReply(piTurn('#offline {"txt":"typo"}'), { seq: 1 });
    expect(reply.source).toBe('bad-directive');
    expect(texts(reply)[0]).toMatch(/^Offline model: bad #offline directive:/);
  });
});

describe('ScriptSchema', () => {
  it.each<[unknown, boolean]>([
    [{ text: 'a' }, true],
    [{ thinking: 't', text: 'a' }, true],
    [{ tool: 'read', path: 'x' }, true],
    [{ tool: 'write', path: 'x', content: 'c' }, true],
    [{ tool: 'write', path: 'x' }, false],
    [{ tool: 'shell', command: 'ls' }, true],
    [{ tool: 'list', path: '.' }, true],
    [{ tool: 'delete', path: 'x' }, false],
    [{ text: 'a', chunks: 5, delayMs: 10 }, true],
    [{ text: 'a', chunks: 0 }, false],
    [{ error: 429, retryAfter: 0 }, true],
    [{ error: 200 }, false],
    [{ cut: true }, true],
    [{ cut: false }, false],
  ])('%j valid=%s', (script, valid) => {
    expect(ScriptSchema.safeParse(script).success).toBe(valid);
  });
});

describe('decideReply', () => {
  it('default text quotes the typed user text (reminders dropped), 200 chars max', () => {
    const long = 'x'.repeat(300);
    expect(texts(decideReply(claudeTurn('hello there'), { seq: 1 }))).toEqual(['Offline model reply to: hello there']);
    expect(texts(decideReply(piTurn(long), { seq: 1 }))[0]).toBe(`Offline model reply to: ${'x'.repeat(200)}`);
    expect(userText(claudeTurn('typed'))).toBe('typed');
  });

  it('thinking then text, with a signature', () => {
    const r = asMessage(decideReply(piTurn('#offline {"thinking":"hmm","text":"yes"}'), { seq: 3 }));
    expect(r.steps).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: THINKING_SIGNATURE },
      { type: 'text', text: 'yes' },
    ]);
    expect(r.stopReason).toBe('end_turn');
    expect(r.id).toBe('msg_offline_3');
  });

  it('error scripts become error replies with the Anthropic type', () => {
    const cases: [Script, number, string][] = [
      [{ error: 401 }, 401, 'authentication_error'],
      [{ error: 429, retryAfter: 0 }, 429, 'rate_limit_error'],
      [{ error: 500 }, 500, 'api_error'],
      [{ error: 529 }, 529, 'overloaded_error'],
      [{ error: 403 }, 403, 'permission_error'],
    ];
    for (const [script, status, errorType] of cases) {
      const r = decideReply(piTurn('x'), { seq: 1, queued: script });
      expect(r).toMatchObject({ kind: 'error', status, errorType, source: 'queue' });
    }
    expect(decideReply(piTurn('x'), { seq: 1, queued: { error: 429, retryAfter: 0 } })).toMatchObject({
      retryAfter: 0,
    });
  });

  it('cut: part of a text block, then the cut marker', () => {
    const r = asMessage(decideReply(piTurn('#offline {"cut":true,"text":"half"}'), { seq: 1 }));
    expect(r.steps).toEqual([{ type: 'text', text: 'half' }, { type: 'cut' }]);
  });

  it('pacing is carried through', () => {
    const r = asMessage(decideReply(piTurn('#offline {"text":"abc","chunks":3,"delayMs":50}'), { seq: 1 }));
    expect([r.chunks, r.delayMs]).toEqual([3, 50]);
  });

  it('a tool_result in the last user message is quoted, not answered with another tool call', () => {
    const r = req({
      tools: piTools,
      messages: [
        { role: 'user', content: '#offline {"tool":"read","path":"a.txt"}' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read', input: { path: 'a.txt' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'FILE BODY' }] }],
        },
      ],
    });
    const reply = decideReply(r, { seq: 2 });
    expect(reply.source).toBe('tool-result');
    expect(texts(reply)).toEqual(['Tool result: FILE BODY']);
    expect(toolUse(reply)).toBeUndefined();
  });

  it('a directive riding along with a tool_result (claude merges text into that message) cannot loop', () => {
    const r = req({
      tools: piTools,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'done' },
            { type: 'text', text: '#offline {"tool":"read","path":"a.txt"}' },
          ],
        },
      ],
    });
    const reply = decideReply(r, { seq: 2 });
    expect(toolUse(reply)).toBeUndefined();
    expect(texts(reply)).toEqual(['Tool result: done']);
  });

  it('quotes at most 500 chars of a result and marks errors', () => {
    const r = req({
      tools: piTools,
      messages: [
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', is_error: true, content: 'e'.repeat(600) }],
        },
      ],
    });
    expect(texts(decideReply(r, { seq: 1 }))).toEqual([`Tool result (error): ${'e'.repeat(500)}`]);
  });

  it('a queued script wins over a directive, and is honoured even after a tool result', () => {
    expect(texts(decideReply(piTurn('#offline {"text":"directive"}'), { seq: 1, queued: { text: 'queued' } }))).toEqual(
      ['queued'],
    );
    const afterResult = req({
      tools: piTools,
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] }],
    });
    expect(toolUse(decideReply(afterResult, { seq: 1, queued: { tool: 'shell', command: 'true' } }))?.name).toBe(
      'bash',
    );
  });

  it('side requests get a harmless answer and never see directives', () => {
    const side = req({ stream: false, messages: [{ role: 'user', content: '#offline {"error":500}' }] });
    const reply = decideReply(side, { seq: 1 });
    expect(reply).toMatchObject({ kind: 'message', source: 'side' });
    expect(texts(reply)).toEqual([SIDE_REPLY_TEXT]);
  });

  it("answers claude's title request with JSON matching its schema", () => {
    const title = req({
      tools: [],
      messages: [{ role: 'user', content: '<session>\n#offline {"error":500}\n</session>' }],
      output_config: {
        format: {
          type: 'json_schema',
          schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
        },
      },
    });
    expect(JSON.parse(texts(decideReply(title, { seq: 1 }))[0] ?? '')).toEqual({ title: SIDE_REPLY_TEXT });
  });

  it('usage is deterministic and grows with input and output', () => {
    const a = asMessage(decideReply(piTurn('#offline {"text":"a"}'), { seq: 1 }));
    const b = asMessage(decideReply(piTurn('#offline {"text":"a"}'), { seq: 9 }));
    const c = asMessage(decideReply(piTurn(`${'y'.repeat(400)}\n#offline {"text":"${'a'.repeat(400)}"}`), { seq: 1 }));
    expect(a.usage).toEqual(b.usage);
    expect(c.usage.input_tokens).toBeGreaterThan(a.usage.input_tokens + 90);
    expect(c.usage.output_tokens).toBe(100);
  });
});

describe('mapTool', () => {
  const tool = (script: Script, r: MessagesRequest) => toolUse(decideReply(r, { seq: 7, queued: script }));

  it("maps onto claude's tools, making paths absolute against the stated cwd", () => {
    const r = claudeTurn('x');
    expect(workingDirectory(r)).toBe('/work/ws');
    expect(tool({ tool: 'read', path: 'a.txt' }, r)).toEqual({
      type: 'tool_use',
      id: 'toolu_offline_7',
      name: 'Read',
      input: { file_path: '/work/ws/a.txt' },
    });
    expect(tool({ tool: 'write', path: 'sub/../b.txt', content: 'B' }, r)?.input).toEqual({
      file_path: '/work/ws/b.txt',
      content: 'B',
    });
    expect(tool({ tool: 'write', path: '/abs/c', content: 'C' }, r)?.input).toEqual({
      file_path: '/abs/c',
      content: 'C',
    });
    expect(tool({ tool: 'shell', command: 'echo hi' }, r)).toMatchObject({
      name: 'Bash',
      input: { command: 'echo hi' },
    });
    // claude 2.1.197 offers no LS/Glob tool: listing goes through the shell, quoted.
    expect(tool({ tool: 'list', path: "it's" }, r)).toMatchObject({
      name: 'Bash',
      input: { command: `ls -1a 'it'\\''s'` },
    });
  });

  it("maps onto pi's tools with path parameters left as given", () => {
    const r = piTurn('x');
    expect(tool({ tool: 'read', path: 'a.txt' }, r)).toMatchObject({ name: 'read', input: { path: 'a.txt' } });
    expect(tool({ tool: 'write', path: 'a.txt', content: 'A' }, r)).toMatchObject({
      name: 'write',
      input: { path: 'a.txt', content: 'A' },
    });
    expect(tool({ tool: 'list', path: 'dir' }, r)).toMatchObject({ name: 'ls', input: { path: 'dir' } });
    expect(tool({ tool: 'shell', command: 'pwd' }, r)).toMatchObject({ name: 'bash', input: { command: 'pwd' } });
  });

  it('uses a glob tool for listing when there is no ls tool', () => {
    const r = req({
      tools: [{ name: 'Glob', input_schema: { properties: { pattern: {}, path: {} } } }],
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(mapTool({ tool: 'list', path: 'src' }, r)).toEqual({ name: 'Glob', input: { pattern: '*', path: 'src' } });
  });

  it('says so in text when no offered tool fits', () => {
    const r = req({
      tools: [{ name: 'Weather', input_schema: { properties: { city: {} } } }],
      messages: [{ role: 'user', content: 'x' }],
    });
    const reply = decideReply(r, { seq: 1, queued: { tool: 'write', path: 'a', content: 'b' } });
    expect(toolUse(reply)).toBeUndefined();
    expect(texts(reply)[0]).toMatch(/no offered tool can write a file \(offered: Weather\)/);
    expect(asMessage(reply).stopReason).toBe('end_turn');
  });

  it('puts thinking and text before the call and stops with tool_use', () => {
    const r = asMessage(
      decideReply(piTurn('#offline {"thinking":"t","text":"on it","tool":"read","path":"a"}'), { seq: 1 }),
    );
    expect(r.steps.map((s) => s.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(r.stopReason).toBe('tool_use');
  });
});

describe('exampleFor', () => {
  it('builds a minimal instance of a schema', () => {
    expect(
      exampleFor({
        type: 'object',
        properties: {
          a: { type: 'string' },
          b: { type: 'integer' },
          c: { type: 'array' },
          d: { enum: ['x', 'y'] },
          e: { type: 'boolean' },
        },
      }),
    ).toEqual({ a: SIDE_REPLY_TEXT, b: 0, c: [], d: 'x', e: false });
  });
});
