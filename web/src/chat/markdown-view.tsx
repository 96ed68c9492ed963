import { memo } from 'preact/compat';
import { renderMarkdown } from './markdown.ts';

/** Sanitized Markdown; re-rendered only when its text changes. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
});

/** Copy buttons inside rendered code blocks, handled once for the whole conversation. */
export function handleCopyClick(e: MouseEvent): void {
  const btn = (e.target as Element | null)?.closest?.('button.copy-code');
  if (!(btn instanceof HTMLButtonElement)) return;
  const code = btn.closest('.code-block')?.querySelector('pre')?.textContent ?? '';
  void navigator.clipboard.writeText(code).then(
    () => {
      btn.textContent = 'Copied';
      setTimeout(() => (btn.textContent = 'Copy'), 1500);
    },
    () => {
      btn.textContent = 'Copy failed';
    },
  );
}
