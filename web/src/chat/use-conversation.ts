// A session's conversation, live: the event stream (replayed from the start, then followed)
// folded into the view model. Events are queued as they arrive and folded once per animation
// frame, so a burst of deltas costs one render.
import { useEffect, useState } from 'preact/hooks';
import type { Presence } from '@switchyard/protocol';
import {
  SessionStream,
  type SessionStreamOptions,
  type StreamEvent,
  type StreamStatus,
} from '../stream/session-stream.ts';
import { applyEvents, type Conversation, emptyConversation } from './conversation.ts';

/** `fetch` is for the bench harness, which feeds a scripted stream through the same path. */
export function useConversation(
  sessionId: string,
  streamOptions: Pick<SessionStreamOptions, 'fetch'> = {},
): { conv: Conversation; link: StreamStatus; presence: Presence | null } {
  const [conv, setConv] = useState(emptyConversation);
  const [link, setLink] = useState<StreamStatus>({ state: 'connecting' });
  const [presence, setPresence] = useState<Presence | null>(null);
  useEffect(() => {
    let queue: StreamEvent[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      const batch = queue;
      queue = [];
      setConv((c) => applyEvents(c, batch));
    };
    const stream = new SessionStream({
      ...streamOptions,
      sessionId,
      onEvents: (events) => {
        queue.push(...events);
        // Hidden tabs get no animation frames; fold right away there so nothing piles up.
        if (document.visibilityState === 'hidden') flush();
        else if (frame === 0) frame = requestAnimationFrame(flush);
      },
      onStatus: setLink,
      onPresence: setPresence,
    });
    stream.start();
    return () => {
      cancelAnimationFrame(frame);
      stream.stop();
    };
  }, [sessionId]);
  return { conv, link, presence };
}
