// Keeps a scroll box pinned to its newest output while the reader is at the bottom: when output
// arrives, and when the box itself shrinks (the files panel opens, the draft grows).
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';

/** Within this many pixels of the bottom counts as at the bottom. */
const NEAR = 80;

export function useStickToBottom<T extends HTMLElement>(dep: unknown) {
  const ref = useRef<T>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el === null) return;
    /** The height the resize observer last saw: a scroll at another height is the browser's, not the reader's. */
    let height = el.clientHeight;
    const onScroll = () => {
      if (el.clientHeight !== height) return;
      pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < NEAR;
    };
    el.addEventListener('scroll', onScroll, { passive: true });
    const resized = new ResizeObserver(() => {
      height = el.clientHeight;
      if (pinned.current) el.scrollTop = el.scrollHeight;
    });
    resized.observe(el);
    return () => {
      el.removeEventListener('scroll', onScroll);
      resized.disconnect();
    };
  }, []);
  useLayoutEffect(() => {
    const el = ref.current;
    if (el !== null && pinned.current) el.scrollTop = el.scrollHeight;
  }, [dep]);
  return ref;
}
