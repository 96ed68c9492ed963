/**
 * The text a model request carries from the user: the last `role:"user"` message's
 * text blocks joined, without the `<system-reminder>` blocks claude adds.
 */
export function lastUserText(body: unknown): string {
  const messages = (body as { messages?: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ type: string; text?: string }>)
    .filter((b) => b.type === 'text' && !b.text?.startsWith('<system-reminder>'))
    .map((b) => b.text)
    .join('');
}
