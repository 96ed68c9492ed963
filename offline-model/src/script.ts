// Decides what the offline model answers. Pure: no clock, no I/O, no state;
// the server passes in the queued script (if any) and a sequence number.
import { z } from 'zod';

// ---------------------------------------------------------------------------
// Request (lenient: the CLIs send many fields we don't care about, and new
// versions add more; only what we read is checked).

const ContentBlockIn = z.looseObject({ type: z.string() });
const Content = z.union([z.string(), z.array(ContentBlockIn)]);

export const MessagesRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: Content })),
  system: z.union([z.string(), z.array(ContentBlockIn)]).optional(),
  tools: z
    .array(
      z.looseObject({
        name: z.string(),
        input_schema: z
          .looseObject({
            properties: z.record(z.string(), z.unknown()).optional(),
            required: z.array(z.string()).optional(),
          })
          .optional(),
      }),
    )
    .optional(),
  stream: z.boolean().optional(),
  max_tokens: z.number().optional(),
  output_config: z
    .looseObject({ format: z.looseObject({ type: z.string(), schema: z.unknown().optional() }).optional() })
    .optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

// ---------------------------------------------------------------------------
// Scripts. Strict objects: a typo in a test's script should fail loudly
// rather than silently fall through to the default reply.

const pacing = {
  /** Split each text/thinking block (and tool input JSON) into this many deltas. */
  chunks: z.int().min(1).max(10_000).optional(),
  /** Pause before every delta after the first one. */
  delayMs: z.int().min(0).max(600_000).optional(),
};
const prose = { thinking: z.string().optional(), text: z.string().optional(), ...pacing };

export const ScriptSchema = z.union([
  z.strictObject({
    error: z.int().min(400).max(599),
    /** Seconds, sent as the `retry-after` header. */
    retryAfter: z.number().min(0).optional(),
    message: z.string().optional(),
  }),
  z.strictObject({ cut: z.literal(true), text: z.string().optional() }),
  z.strictObject({ tool: z.literal('read'), path: z.string(), ...prose }),
  z.strictObject({ tool: z.literal('list'), path: z.string(), ...prose }),
  z.strictObject({ tool: z.literal('write'), path: z.string(), content: z.string(), ...prose }),
  z.strictObject({ tool: z.literal('shell'), command: z.string(), ...prose }),
  z.strictObject(prose),
]);
export type Script = z.infer<typeof ScriptSchema>;
export type ToolScript = Extract<Script, { tool: string }>;

// ---------------------------------------------------------------------------
// Reply

export type ReplyStep =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  /** The connection dies here, in the middle of the message. */
  | { type: 'cut' };

export type Usage = { input_tokens: number; output_tokens: number };

/** Why this reply was chosen; recorded so tests can see what happened. */
export type ReplySource = 'queue' | 'directive' | 'bad-directive' | 'tool-result' | 'default' | 'side';

export type MessageReply = {
  kind: 'message';
  id: string;
  model: string;
  steps: ReplyStep[];
  stopReason: 'end_turn' | 'tool_use';
  usage: Usage;
  chunks: number;
  delayMs: number;
  source: ReplySource;
};

export type ErrorReply = {
  kind: 'error';
  status: number;
  errorType: string;
  message: string;
  retryAfter?: number;
  source: ReplySource;
};

export type Reply = MessageReply | ErrorReply;

export const SIDE_REPLY_TEXT = 'Offline model.';
export const THINKING_SIGNATURE = 'offline-model-signature';
const DIRECTIVE_PREFIX = '#offline';

// ---------------------------------------------------------------------------
// Reading the request

type Message = MessagesRequest['messages'][number];
type Block = z.infer<typeof ContentBlockIn>;

function blocksOf(content: Message['content']): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function textOf(block: Block): string | undefined {
  return block.type === 'text' && typeof block.text === 'string' ? block.text : undefined;
}

/** The last message with role user. claude appends role:"system" messages after it. */
function lastUserMessage(req: MessagesRequest): Message | undefined {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i];
    if (m?.role === 'user') return m;
  }
  return undefined;
}

/**
 * Only requests that can drive the agent loop count as turns. claude 2.1.197
 * also sends a session-title request (streaming, `tools: []`, structured
 * output via `output_config.format`) unless
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, and older/other paths send small
 * non-streaming tool-less requests; neither may eat a scripted reply.
 */
export function isMainTurn(req: MessagesRequest): boolean {
  if ((req.tools?.length ?? 0) > 0) return true;
  return req.stream === true && req.output_config?.format === undefined;
}

const SYSTEM_REMINDER = /^\s*<system-reminder>/;

/** The human-typed text of the last user message (claude's injected reminders dropped). */
export function userText(req: MessagesRequest): string {
  const m = lastUserMessage(req);
  if (!m) return '';
  return blocksOf(m.content)
    .map(textOf)
    .filter((t): t is string => t !== undefined && !SYSTEM_REMINDER.test(t))
    .join('\n')
    .trim();
}

export type Directive = { ok: true; script: Script } | { ok: false; error: string };

/**
 * Finds a `#offline <json>` line in any text block of the last user message
 * (reminder blocks included: a directive is a directive wherever it lands).
 * The last one wins.
 */
export function findDirective(req: MessagesRequest): Directive | undefined {
  const m = lastUserMessage(req);
  if (!m) return undefined;
  let found: string | undefined;
  for (const block of blocksOf(m.content)) {
    const text = textOf(block);
    if (text === undefined) continue;
    for (const line of text.split(/\r?\n/)) {
      const match = /^\s*#offline\s+(.*)$/.exec(line);
      if (match?.[1] !== undefined) found = match[1].trim();
    }
  }
  if (found === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(found);
  } catch (e) {
    return { ok: false, error: `not JSON: ${(e as Error).message}` };
  }
  const parsed = ScriptSchema.safeParse(json);
  if (!parsed.success) return { ok: false, error: z.prettifyError(parsed.error).replace(/\s+/g, ' ') };
  return { ok: true, script: parsed.data };
}

type ToolResult = { text: string; isError: boolean };

/** The tool results carried by the last user message, or undefined if it carries none. */
export function toolResults(req: MessagesRequest): ToolResult[] | undefined {
  const m = lastUserMessage(req);
  if (!m) return undefined;
  const results = blocksOf(m.content).filter((b) => b.type === 'tool_result');
  if (results.length === 0) return undefined;
  return results.map((b) => {
    const c = b.content;
    let text = '';
    if (typeof c === 'string') text = c;
    else if (Array.isArray(c)) {
      text = c
        .map((x: unknown) =>
          typeof x === 'object' && x !== null && (x as Block).type === 'text' ? String((x as Block).text ?? '') : '',
        )
        .filter((t) => t !== '')
        .join('\n');
    }
    return { text, isError: b.is_error === true };
  });
}

/** The working directory the CLI announces in its system prompt (claude and pi both do). */
export function workingDirectory(req: MessagesRequest): string | undefined {
  const sys = req.system;
  const text =
    typeof sys === 'string' ? sys : (sys ?? []).map((b) => (typeof b.text === 'string' ? b.text : '')).join('\n');
  const m = /(?:Primary working directory|Current working directory|Working directory):\s*(\/[^\n]*)/.exec(text);
  return m?.[1]?.trim();
}

// ---------------------------------------------------------------------------
// Mapping a tool script onto the tools the request offers

type Tool = NonNullable<MessagesRequest['tools']>[number];

// Names in order of preference; matched case-insensitively.
const TOOL_NAMES = {
  read: ['read', 'read_file', 'readfile', 'view'],
  write: ['write', 'write_file', 'writefile', 'create_file'],
  list: ['ls', 'list', 'list_dir', 'list_directory'],
  glob: ['glob', 'find'],
  shell: ['bash', 'shell', 'run_shell_command', 'exec'],
} as const;

const PARAM_NAMES = {
  path: ['file_path', 'path', 'filePath', 'filename', 'file'],
  dir: ['path', 'dir', 'directory', 'dir_path'],
  content: ['content', 'contents', 'file_text', 'text'],
  command: ['command', 'cmd'],
  pattern: ['pattern', 'glob'],
} as const;

function findTool(tools: Tool[], names: readonly string[]): Tool | undefined {
  for (const name of names) {
    const t = tools.find((x) => x.name.toLowerCase() === name);
    if (t) return t;
  }
  return undefined;
}

function param(tool: Tool, candidates: readonly string[]): string | undefined {
  const props = Object.keys(tool.input_schema?.properties ?? {});
  return candidates.find((c) => props.includes(c));
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function posixJoin(dir: string, rel: string): string {
  const parts: string[] = [];
  for (const p of `${dir}/${rel}`.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return `/${parts.join('/')}`;
}

type ToolCall = { name: string; input: Record<string, unknown> } | { unavailable: string };

/**
 * Picks the offered tool for an action and fills its parameters from the
 * tool's input_schema. A `file_path` parameter is claude's, whose tools want
 * absolute paths, so relative paths are resolved against the announced cwd.
 */
export function mapTool(script: ToolScript, req: MessagesRequest): ToolCall {
  const tools = req.tools ?? [];
  const cwd = workingDirectory(req);
  const pathFor = (name: string, p: string): string =>
    name === 'file_path' && !p.startsWith('/') && cwd !== undefined ? posixJoin(cwd, p) : p;
  const shell = (command: string): ToolCall | undefined => {
    const t = findTool(tools, TOOL_NAMES.shell);
    const c = t && param(t, PARAM_NAMES.command);
    return t && c ? { name: t.name, input: { [c]: command } } : undefined;
  };
  const none = (what: string): ToolCall => ({
    unavailable: `Offline model: no offered tool can ${what} (offered: ${tools.map((t) => t.name).join(', ') || 'none'}).`,
  });

  switch (script.tool) {
    case 'read':
    case 'write': {
      const t = findTool(tools, TOOL_NAMES[script.tool]);
      const p = t && param(t, PARAM_NAMES.path);
      if (!t || !p) return none(script.tool === 'read' ? 'read a file' : 'write a file');
      if (script.tool === 'read') return { name: t.name, input: { [p]: pathFor(p, script.path) } };
      const c = param(
        t,
        PARAM_NAMES.content.filter((x) => x !== p),
      );
      if (!c) return none('write a file');
      return { name: t.name, input: { [p]: pathFor(p, script.path), [c]: script.content } };
    }
    case 'list': {
      const ls = findTool(tools, TOOL_NAMES.list);
      const lsDir = ls && param(ls, PARAM_NAMES.dir);
      if (ls && lsDir) return { name: ls.name, input: { [lsDir]: script.path } };
      const glob = findTool(tools, TOOL_NAMES.glob);
      const pattern = glob && param(glob, PARAM_NAMES.pattern);
      if (glob && pattern) {
        const dir = param(
          glob,
          PARAM_NAMES.dir.filter((x) => x !== pattern),
        );
        return dir
          ? { name: glob.name, input: { [pattern]: '*', [dir]: script.path } }
          : { name: glob.name, input: { [pattern]: `${script.path.replace(/\/+$/, '')}/*` } };
      }
      // claude 2.1.197 offers neither LS nor Glob; listing through the shell still exercises a tool.
      return shell(`ls -1a ${shellQuote(script.path)}`) ?? none('list a directory');
    }
    case 'shell':
      return shell(script.command) ?? none('run a shell command');
  }
}

// ---------------------------------------------------------------------------
// Deciding the reply

const ERROR_TYPES: Record<number, [type: string, message: string]> = {
  400: ['invalid_request_error', 'Invalid request (offline model).'],
  401: ['authentication_error', 'invalid x-api-key'],
  402: ['billing_error', 'Your credit balance is too low (offline model).'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not found (offline model).'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of requests has exceeded your rate limit (offline model).'],
  500: ['api_error', 'Internal server error'],
  504: ['timeout_error', 'Request timeout'],
  529: ['overloaded_error', 'Overloaded'],
};

function errorTypeFor(status: number): [type: string, message: string] {
  return (
    ERROR_TYPES[status] ??
    (status >= 500
      ? ['api_error', 'Internal server error']
      : ['invalid_request_error', 'Invalid request (offline model).'])
  );
}

/** Deterministic token estimate: about four characters a token. */
function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

export function inputTokens(req: MessagesRequest): number {
  const chars =
    JSON.stringify(req.system ?? '').length +
    JSON.stringify(req.messages).length +
    JSON.stringify(req.tools ?? []).length;
  return estimateTokens(chars);
}

function outputChars(steps: ReplyStep[]): number {
  let n = 0;
  for (const s of steps) {
    if (s.type === 'text') n += s.text.length;
    else if (s.type === 'thinking') n += s.thinking.length;
    else if (s.type === 'tool_use') n += JSON.stringify(s.input).length;
  }
  return n;
}

const defaultText = (req: MessagesRequest): string => `Offline model reply to: ${userText(req).slice(0, 200)}`;

export function toolResultText(results: ToolResult[]): string {
  const text = results.map((r) => r.text).join('\n');
  const failed = results.some((r) => r.isError);
  return `Tool result${failed ? ' (error)' : ''}: ${text.slice(0, 500)}`;
}

/**
 * A minimal value satisfying a JSON schema: claude's title request asks for
 * structured output (`{"title": string}`), and a valid answer keeps its
 * logs free of parse errors.
 */
export function exampleFor(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return SIDE_REPLY_TEXT;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if ('const' in s) return s.const;
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const alts = s[key];
    if (Array.isArray(alts) && alts.length > 0) return exampleFor(alts[0], depth + 1);
  }
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required) ? (s.required as string[]) : Object.keys(props);
      return Object.fromEntries(required.map((k) => [k, exampleFor(props[k], depth + 1)]));
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return SIDE_REPLY_TEXT;
  }
}

function sideText(req: MessagesRequest): string {
  const format = req.output_config?.format;
  return format?.type === 'json_schema' ? JSON.stringify(exampleFor(format.schema)) : SIDE_REPLY_TEXT;
}

export type DecideInput = {
  /** The script taken from the queue for this request, if the server took one. */
  queued?: Script;
  /** Per-server request counter; makes ids unique and deterministic. */
  seq: number;
};

/**
 * Precedence for a main turn: queued script, then a directive in the last
 * user message (unless that message carries tool results, so a tool-call
 * directive cannot loop), then the tool-result echo, then the default text.
 * Side requests always get a short harmless text.
 */
export function decideReply(req: MessagesRequest, input: DecideInput): Reply {
  const model = req.model ?? 'offline-1';
  const message = (
    steps: ReplyStep[],
    source: ReplySource,
    pace: { chunks?: number; delayMs?: number } = {},
  ): MessageReply => ({
    kind: 'message',
    id: `msg_offline_${input.seq}`,
    model,
    steps,
    stopReason: steps.some((s) => s.type === 'tool_use') ? 'tool_use' : 'end_turn',
    usage: { input_tokens: inputTokens(req), output_tokens: estimateTokens(outputChars(steps)) },
    chunks: pace.chunks ?? 1,
    delayMs: pace.delayMs ?? 0,
    source,
  });

  if (!isMainTurn(req)) return message([{ type: 'text', text: sideText(req) }], 'side');

  const results = toolResults(req);
  let script = input.queued;
  let source: ReplySource = 'queue';
  if (!script && !results) {
    const d = findDirective(req);
    if (d && !d.ok)
      return message(
        [{ type: 'text', text: `Offline model: bad ${DIRECTIVE_PREFIX} directive: ${d.error}` }],
        'bad-directive',
      );
    if (d) {
      script = d.script;
      source = 'directive';
    }
  }
  if (!script) {
    return results
      ? message([{ type: 'text', text: toolResultText(results) }], 'tool-result')
      : message([{ type: 'text', text: defaultText(req) }], 'default');
  }
  return fromScript(script, req, input, source, message);
}

function fromScript(
  script: Script,
  req: MessagesRequest,
  input: DecideInput,
  source: ReplySource,
  message: (steps: ReplyStep[], source: ReplySource, pace?: { chunks?: number; delayMs?: number }) => MessageReply,
): Reply {
  if ('error' in script) {
    const [errorType, msg] = errorTypeFor(script.error);
    const reply: ErrorReply = {
      kind: 'error',
      status: script.error,
      errorType,
      message: script.message ?? msg,
      source,
    };
    if (script.retryAfter !== undefined) reply.retryAfter = script.retryAfter;
    return reply;
  }
  if ('cut' in script) {
    return message(
      [{ type: 'text', text: script.text ?? 'This reply is cut off in the mid' }, { type: 'cut' }],
      source,
    );
  }
  const steps: ReplyStep[] = [];
  if (script.thinking !== undefined)
    steps.push({ type: 'thinking', thinking: script.thinking, signature: THINKING_SIGNATURE });
  if ('tool' in script) {
    const call = mapTool(script, req);
    if ('unavailable' in call) {
      steps.push({ type: 'text', text: call.unavailable });
    } else {
      if (script.text !== undefined) steps.push({ type: 'text', text: script.text });
      steps.push({ type: 'tool_use', id: `toolu_offline_${input.seq}`, name: call.name, input: call.input });
    }
  } else {
    steps.push({ type: 'text', text: script.text ?? defaultText(req) });
  }
  return message(steps, source, script);
}
