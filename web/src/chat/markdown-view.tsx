import { memo } from 'preact/compat';
import { markdownPieces } from './markdown-pieces.ts';
import { renderMarkdown } from './markdown.ts';

const Piece = memo(function Piece({ text }: { text: string }) {
  return <div class="md-piece" dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
});

/** Sanitized Markdown; only pieces whose text changed render again. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div class="markdown">
      {markdownPieces(text).map((p, i) => (
        <Piece key={i} text={p} />
      ))}
    </div>
  );
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
