import type { AgentCodec, AgentEvent, Backend } from '@switchyard/protocol';
import { jsonValue } from '../json.ts';
import { WARM_UP_REPLY_TEXT } from '../sandbox/warm-up-reply.ts';

/**
 * A pooled runner's CLI, once it reads its stdin, goes through a throwaway exchange before it
 * counts as ready (docs/DESIGN.md "Warm runner pool" → "The CLI's first turn, taken before the
 * claim"). Both CLIs spend 50–80 ms more on their first message than on later ones (code loaded
 * and compiled on first use; pi imports its model provider then); taken here, while the runner
 * waits in the pool, the session's first message no longer pays for it. The model proxy answers
 * the exchange itself, and nothing of it stays in the conversation the session gets:
 * - claude: a side question (`control_request` `side_question`, verified on 2.1.197 and not in
 *   claude's documentation), a full model call that stays outside the conversation; then its
 *   context usage (`get_context_usage`, likewise), which builds the system prompt and tools a
 *   first message sends and counts their tokens (the proxy answers the counts);
 * - pi: a prompt, then `new_session` (the conversation starts again) and `get_state`, whose
 *   answer names the new session file the transcript is read from.
 * Each step ends on the CLI's answer, taken or not: a CLI that refuses a step (an error answer,
 * as claude gives to a request subtype it does not know) is merely not warm (the runner logs it),
 * and ready all the same. One that never answers is a CLI that never got ready: the start
 * timeout ends it, and the pool replaces the runner.
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
    return [
      claudeControl(`${id}-side`, { subtype: 'side_question', question: WARM_UP_PROMPT }, (response) => {
        // A side question whose model call failed is answered with success and an error text.
        const text = fieldOf(response, 'response');
        return typeof text === 'string' && text.includes(WARM_UP_REPLY_TEXT);
      }),
      claudeControl(`${id}-context`, { subtype: 'get_context_usage' }, (response) =>
        Array.isArray(fieldOf(response, 'categories')),
      ),
    ];
  }
  return [
    {
      lines: () => [codec.encodeUserMessage({ text: WARM_UP_PROMPT })],
      answer: (_line, event) =>
        event?.type !== 'turn.done' ? undefined : event.error === undefined ? 'done' : 'refused',
    },
    piCommand(`${id}-new`, { type: 'new_session' }),
    piSessionNamed(codec),
  ];
}

/** A pi RPC command, answered by the `response` with its id (`success` true, or refused). */
export function piCommand(id: string, command: { type: string } & Record<string, unknown>): WarmUpStep {
  return {
    lines: () => [`${JSON.stringify({ id, ...command })}\n`],
    answer: (line) => {
      const msg = line?.includes(id) ? jsonValue(line) : undefined;
      if (fieldOf(msg, 'type') !== 'response' || fieldOf(msg, 'id') !== id) return undefined;
      return fieldOf(msg, 'success') === true ? 'done' : 'refused';
    },
  };
}

/**
 * pi's `get_state`, answered by the `session.init` the codec makes of it: the session file it
 * names is the transcript from then on (the codec's resume handle).
 */
export function piSessionNamed(codec: AgentCodec): WarmUpStep {
  return {
    lines: () => codec.initLines(),
    answer: (_line, event) => (event?.type === 'session.init' ? 'done' : undefined),
  };
}

/** A claude `control_request`; its `control_response` is taken when it succeeded and `taken` says so. */
function claudeControl(
  requestId: string,
  request: Record<string, unknown>,
  taken: (response: unknown) => boolean,
): WarmUpStep {
  return {
    lines: () => [`${JSON.stringify({ type: 'control_request', request_id: requestId, request })}\n`],
    answer: (line) => {
      const msg = line?.includes(requestId) ? jsonValue(line) : undefined;
      const response = fieldOf(msg, 'response');
      if (fieldOf(msg, 'type') !== 'control_response' || fieldOf(response, 'request_id') !== requestId)
        return undefined;
      return fieldOf(response, 'subtype') === 'success' && taken(fieldOf(response, 'response')) ? 'done' : 'refused';
    },
  };
}

function fieldOf(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}
