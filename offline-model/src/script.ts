// Decides what the offline model answers: the script (queued, or a `#offline` directive in the
// user's text) or a default, as a reply. Pure: no clock, no I/O, no state; the server passes in
// the queued script (if any) and a sequence number. Reading the request is request.ts; mapping a
// tool script onto the offered tools is tools.ts.
import { z } from 'zod';
import {
  estimateTokens,
  inputTokens,
  isMainTurn,
  lastUserTexts,
  type MessagesRequest,
  toolResults,
  type ToolResult,
  userText,
} from './request.ts';
import { mapTool } from './tools.ts';

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
// Directives

export type Directive = { ok: true; script: Script } | { ok: false; error: string };

/**
 * Finds a `#offline <json>` line in any text block of the last user message
 * (reminder blocks included: a directive is a directive wherever it lands).
 * The last one wins.
 */
export function findDirective(req: MessagesRequest): Directive | undefined {
  let found: string | undefined;
  for (const text of lastUserTexts(req)) {
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
