// What Enter does in the message box. With a keyboard, Enter sends and Shift+Enter adds a line.
// On a touch screen the on-screen keyboard has no Shift+Enter, so Enter adds a line there and the
// Send button sends. Ctrl/⌘+Enter sends on both, for a keyboard attached to a tablet.
import { useEffect, useState } from 'preact/hooks';

/** A touch screen is the main way in: no mouse (pointer: coarse). */
const TOUCH = '(pointer: coarse)';

export function useTouchTyping(): boolean {
  const [touch, setTouch] = useState(() => window.matchMedia(TOUCH).matches);
  useEffect(() => {
    const query = window.matchMedia(TOUCH);
    const changed = () => setTouch(query.matches);
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, []);
  return touch;
}

/** Whether this key press sends the message (the caller then keeps Enter from adding a line). */
export function enterSends(e: KeyboardEvent, touch: boolean): boolean {
  if (e.key !== 'Enter' || e.isComposing) return false;
  if (e.ctrlKey || e.metaKey) return true;
  return !touch && !e.shiftKey;
}

/** The hint under the box, in the words of the device in hand. */
export function composerHint(touch: boolean): string {
  return touch
    ? 'Enter adds a line · tap Send to send · paste images'
    : 'Enter sends · Shift+Enter adds a line · paste or drop images';
}
