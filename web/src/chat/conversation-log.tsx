import { useState } from 'preact/hooks';
import type { Conversation } from './conversation.ts';
import { handleCopyClick } from './markdown-view.tsx';
import { useStickToBottom } from './stick-to-bottom.ts';
import { TurnView } from './turn-view.tsx';

/**
 * Turns rendered at first in a long session; earlier ones come in pages on request. Rendering
 * Markdown and code for hundreds of turns at once would freeze the page on open.
 */
const RECENT_TURNS = 60;

/**
 * The conversation region: the latest turns, then messages sent but not yet confirmed by the
 * stream. `author` labels the user's messages: "You" unless someone else's session is shown.
 */
export function ConversationLog({
  conv,
  pending,
  author = 'You',
}: {
  conv: Conversation;
  pending: ReadonlyArray<{ messageId: string; text: string }>;
  author?: string;
}) {
  const scroller = useStickToBottom<HTMLElement>(conv);
  const [shown, setShown] = useState(RECENT_TURNS);
  const from = Math.max(0, conv.turns.length - shown);
  return (
    <section
      class="conversation"
      ref={scroller}
      role="log"
      aria-label="Conversation"
      aria-live="polite"
      onClick={handleCopyClick}
    >
      {conv.turns.length === 0 && pending.length === 0 && <p class="muted center">No messages yet. Say hello below.</p>}
      {from > 0 && (
        <p class="center">
          <button type="button" class="btn small" onClick={() => setShown(shown + RECENT_TURNS * 2)}>
            Show {Math.min(from, RECENT_TURNS * 2)} earlier of {from} hidden turns
          </button>
        </p>
      )}
      {conv.turns.slice(from).map((t, i) => (
        <TurnView key={t.messageId ?? `orphan-${from + i}`} turn={t} author={author} />
      ))}
      {pending.map((p) => (
        <article class="turn" key={p.messageId}>
          <div class="msg user pending">
            <div class="msg-author">{author}</div>
            <p class="user-text">{p.text}</p>
          </div>
        </article>
      ))}
    </section>
  );
}
