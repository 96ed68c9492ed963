// A textarea as tall as its text (wrapped lines too), up to its CSS max-height; past that it
// scrolls. Measured from scrollHeight, since rows cannot count the lines a long line wraps into.
import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect } from 'preact/hooks';

function fit(el: HTMLTextAreaElement): void {
  el.style.height = 'auto';
  // border-box sizing: the borders go on top of the content's scrollHeight.
  el.style.height = `${el.scrollHeight + el.offsetHeight - el.clientHeight}px`;
}

export function useAutoGrow(ref: RefObject<HTMLTextAreaElement | null>, value: string): void {
  useLayoutEffect(() => {
    if (ref.current !== null) fit(ref.current);
  }, [value]);
  // A narrower window wraps the same text into more lines.
  useEffect(() => {
    const refit = () => {
      if (ref.current !== null) fit(ref.current);
    };
    window.addEventListener('resize', refit);
    return () => window.removeEventListener('resize', refit);
  }, []);
}
