// What the credential proxy answers a Messages call with while a pooled runner waits for a session
// (docs/DESIGN.md "Warm runner pool" → "The CLI's first turn, taken before the claim"): a
// one-word assistant message in the Messages API's shape, streamed or not as the call asked, so
// the CLI runs its whole request and response path once without anything going upstream; and a
// token count, so claude's context usage builds what a first message sends without a failed call
// (retried for half a second, and then it falls back to a path that warms nothing). Pure.

export const WARM_UP_REPLY_TEXT = 'Warmed up.';

export interface WarmUpReply {
  contentType: string;
  body: string;
}

/** `request`: the call's parsed JSON body (only `stream` and `model` are read), or anything else. */
export function warmUpReply(request: unknown): WarmUpReply {
  const fields = typeof request === 'object' && request !== null ? (request as Record<string, unknown>) : {};
  const model = typeof fields.model === 'string' ? fields.model : 'switchyard-warm-up';
  const message = {
    id: 'msg_switchyard_warm_up',
    type: 'message',
    role: 'assistant',
    model,
    stop_sequence: null,
    usage: { input_tokens: 0, output_tokens: 0 },
  };
  if (fields.stream !== true) {
    const body = {
      ...message,
      content: [{ type: 'text', text: WARM_UP_REPLY_TEXT }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 0, output_tokens: 1 },
    };
    return { contentType: 'application/json', body: JSON.stringify(body) };
  }
  const events: Array<Record<string, unknown>> = [
    { type: 'message_start', message: { ...message, content: [], stop_reason: null } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: WARM_UP_REPLY_TEXT } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } },
    { type: 'message_stop' },
  ];
  const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  return { contentType: 'text/event-stream', body };
}

/**
 * A token count in the count_tokens API's shape: a quarter of the body's bytes, about what a
 * tokenizer makes of English and JSON. Only the throwaway warm-up ever sees it.
 */
export function warmUpTokenCount(bodyBytes: number): WarmUpReply {
  return { contentType: 'application/json', body: JSON.stringify({ input_tokens: Math.ceil(bodyBytes / 4) }) };
}
