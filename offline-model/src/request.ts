// What the offline model reads from a Messages request. Pure: no clock, no I/O, no state.
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

/** Every text block of the last user message, claude's injected reminders included. */
export function lastUserTexts(req: MessagesRequest): string[] {
  const m = lastUserMessage(req);
  if (!m) return [];
  return blocksOf(m.content)
    .map(textOf)
    .filter((t): t is string => t !== undefined);
}

/** The human-typed text of the last user message (claude's injected reminders dropped). */
export function userText(req: MessagesRequest): string {
  return lastUserTexts(req)
    .filter((t) => !SYSTEM_REMINDER.test(t))
    .join('\n')
    .trim();
}

export type ToolResult = { text: string; isError: boolean };

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

/** Deterministic token estimate: about four characters a token. */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

export function inputTokens(req: MessagesRequest): number {
  const chars =
    JSON.stringify(req.system ?? '').length +
    JSON.stringify(req.messages).length +
    JSON.stringify(req.tools ?? []).length;
  return estimateTokens(chars);
}
