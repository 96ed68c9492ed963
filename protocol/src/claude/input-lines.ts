// The lines ClaudeCodec writes to claude's stdin besides approval answers: control requests and
// responses, and user text shaped so claude passes it to the model as it is.

let requestCounter = 0;

export function controlError(requestId: string, error: string): string {
  return `${JSON.stringify({ type: 'control_response', response: { subtype: 'error', request_id: requestId, error } })}\n`;
}

export function interruptLine(): string {
  // A clock alone collides in a tight loop; the counter makes ids unique.
  const requestId = `sy-int-${Date.now().toString(36)}-${(++requestCounter).toString(36)}`;
  return `${JSON.stringify({ type: 'control_request', request_id: requestId, request: { subtype: 'interrupt' } })}\n`;
}

/**
 * claude dispatches a message whose last text block starts with `/` as a
 * local slash command (it never reaches the model, even with
 * --disable-slash-commands). Splitting the leading slashes into their own
 * block keeps the text byte-identical for the model while the last block no
 * longer starts with `/` (invariant 3). Verified on 2.1.197: text made only
 * of slashes reaches the model as it is.
 */
export function textBlocks(text: string): string | Array<{ type: 'text'; text: string }> {
  const lead = /^\s*\/+/.exec(text)?.[0];
  if (lead === undefined || lead.length === text.length) return text;
  return [
    { type: 'text', text: lead },
    { type: 'text', text: text.slice(lead.length) },
  ];
}
