import type { AgentCodec, AgentEvent, Backend } from '@switchyard/protocol';
import { WARM_UP_REPLY_TEXT } from '../sandbox/warm-up-reply.ts';

/**
 * A pooled runner's CLI, once it reads its stdin, goes through one throwaway exchange before it
 * counts as ready (docs/DESIGN.md "Warm runner pool" → "The CLI's first turn, taken before the
 * claim"). Both CLIs spend 50–80 ms more on their first model call than on later ones (code loaded
 * and compiled on first use: pi imports its provider then); taken here, while the runner waits in
 * the pool, the session's first message no longer pays for it. The model proxy answers the
 * exchange itself, and nothing of it stays in the conversation the session gets:
 * - claude: a side question (`control_request` `side_question`, verified on 2.1.197), which runs
 *   a full model call outside the conversation and adds nothing to it;
 * - pi: a prompt, then `new_session` (the conversation starts again) and `get_state`, whose
 *   answer names the new session file the transcript is read from.
 * Each step ends on the CLI's answer, success or not: a CLI that refuses a step is merely not
 * warm (the runner logs it), and still ready.
 */
export interface WarmUpStep {
  /** Written to the CLI's stdin when the step starts. */
  lines(): string[];
  /** The CLI's answer to the step, once it came: the next one may start. */
  answer(line: string | undefined, event: AgentEvent | undefined): StepAnswer | undefined;
}

export type StepAnswer = 'done' | 'refused';

/** What the warm-up asks; the proxy's canned answer never depends on it. */
export const WARM_UP_PROMPT = 'Switchyard warm-up: reply with one word.';

let counter = 0;

export function warmUpFor(backend: Backend, codec: AgentCodec): WarmUpStep[] {
  const id = `sy-warm-${process.pid}-${++counter}`;
  if (backend === 'claude') {
    const request = {
      type: 'control_request',
      request_id: id,
      request: { subtype: 'side_question', question: WARM_UP_PROMPT },
    };
    return [
      {
        lines: () => [`${JSON.stringify(request)}\n`],
        answer: (line) => (line?.includes(id) ? responseOf(line, 'request_id', id) : undefined),
      },
    ];
  }
  return [
    {
      lines: () => [codec.encodeUserMessage({ text: WARM_UP_PROMPT })],
      answer: (_line, event) =>
        event?.type !== 'turn.done' ? undefined : event.error === undefined ? 'done' : 'refused',
    },
    {
      lines: () => [`${JSON.stringify({ id, type: 'new_session' })}\n`],
      answer: (line) => (line?.includes(id) ? responseOf(line, 'id', id) : undefined),
    },
    {
      lines: () => codec.initLines(),
      answer: (_line, event) => (event?.type === 'session.init' ? 'done' : undefined),
    },
  ];
}

/**
 * claude's `control_response` (`response.request_id`, `response.subtype` success | error) or pi's
 * `response` (`id`, `success`) to the step's request; undefined for any other line.
 */
function responseOf(line: string, idField: 'request_id' | 'id', id: string): StepAnswer | undefined {
  let msg: unknown;
  try {
    msg = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof msg !== 'object' || msg === null) return undefined;
  const fields = msg as Record<string, unknown>;
  if (idField === 'id') {
    if (fields.type !== 'response' || fields.id !== id) return undefined;
    return fields.success === true ? 'done' : 'refused';
  }
  const response = fields.response as Record<string, unknown> | undefined;
  if (fields.type !== 'control_response' || typeof response !== 'object' || response?.request_id !== id)
    return undefined;
  // claude answers a side question whose model call failed with success and an error text.
  const answer = response.response as Record<string, unknown> | undefined;
  const text = typeof answer === 'object' && answer !== null ? answer.response : undefined;
  return response.subtype === 'success' && typeof text === 'string' && text.includes(WARM_UP_REPLY_TEXT)
    ? 'done'
    : 'refused';
}
