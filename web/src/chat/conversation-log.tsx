import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Conversation } from './conversation.ts';
import { handleCopyClick } from './markdown-view.tsx';
import { TurnView } from './turn-view.tsx';

/** Keeps the view pinned to the newest output while the reader is at the bottom. */
function useStickToBottom(dep: unknown) {
  const ref = useRef<HTMLElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el === null) return;
    const onScroll = () => {
      pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    };
    el.addEventListener('scroll', onScroll, { passive: true });
    return () => el.removeEventListener('scroll', onScroll);
  }, []);
  useLayoutEffect(() => {
    const el = ref.current;
    if (el !== null && pinned.current) el.scrollTop = el.scrollHeight;
  }, [dep]);
  return ref;
}

/**
 * Turns rendered at first in a long session; earlier ones come in pages on request. Rendering
 * Markdown and code for hundreds of turns at once would freeze the page on open.
 */
const RECENT_TURNS = 60;

/** The conversation region: the latest turns, then messages sent but not yet confirmed by the stream. */
export function ConversationLog({
  conv,
  pending,
}: {
  conv: Conversation;
  pending: ReadonlyArray<{ messageId: string; text: string }>;
}) {
  const scroller = useStickToBottom(conv);
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
        <TurnView key={t.messageId ?? `orphan-${from + i}`} turn={t} />
      ))}
      {pending.map((p) => (
        <article class="turn" key={p.messageId}>
          <div class="msg user pending">
            <div class="msg-author">You</div>
            <p class="user-text">{p.text}</p>
          </div>
        </article>
      ))}
    </section>
  );
}
