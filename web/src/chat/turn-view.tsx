import { memo } from 'preact/compat';
import { formatCost, formatDuration } from '../ui/format.ts';
import { type Block, type TurnView as Turn, turnEndText } from './conversation.ts';
import { ApprovalCard } from './approval-card.tsx';
import { Markdown } from './markdown-view.tsx';

function prettyInput(b: Extract<Block, { kind: 'tool' }>): string {
  if (b.input !== undefined) return JSON.stringify(b.input, null, 2);
  return b.inputText;
}

/** One-line gist of a tool call: the command, path or pattern it acts on. */
function toolGist(b: Extract<Block, { kind: 'tool' }>): string | null {
  const i = b.input;
  if (i === undefined) return null;
  for (const key of ['command', 'file_path', 'path', 'pattern', 'url', 'query']) {
    const v = i[key];
    if (typeof v === 'string' && v !== '') return v.length > 120 ? `${v.slice(0, 120)}…` : v;
  }
  return null;
}

function ToolCard({ block, running }: { block: Extract<Block, { kind: 'tool' }>; running: boolean }) {
  const status =
    block.result === undefined ? (running ? 'running' : 'no result') : block.result.isError ? 'error' : 'done';
  const gist = toolGist(block);
  return (
    <details class={`tool-card tool-${status.replace(' ', '-')}`} aria-label={`Tool call ${block.name}: ${status}`}>
      <summary>
        <span class="tool-status" aria-hidden="true">
          {status === 'running' ? <span class="spinner" /> : status === 'error' ? '✕' : status === 'done' ? '✓' : '–'}
        </span>
        <span class="tool-name">{block.name}</span>
        {gist !== null && <code class="tool-gist">{gist}</code>}
        <span class="tool-state">{status}</span>
      </summary>
      <div class="tool-body">
        <div class="tool-section-label">Input</div>
        <pre class="tool-io">{prettyInput(block) || '…'}</pre>
        {block.result !== undefined && (
          <>
            <div class="tool-section-label">{block.result.isError ? 'Error' : 'Result'}</div>
            <pre class={block.result.isError ? 'tool-io is-error' : 'tool-io'}>
              {block.result.output || '(no output)'}
            </pre>
          </>
        )}
      </div>
    </details>
  );
}

function BlockView({ block, running }: { block: Block; running: boolean }) {
  switch (block.kind) {
    case 'text':
      return <Markdown text={block.text} />;
    case 'thinking':
      return (
        <details class="thinking">
          <summary>Thinking</summary>
          <div class="thinking-text">{block.text}</div>
        </details>
      );
    case 'tool':
      return <ToolCard block={block} running={running} />;
    case 'approval':
      return <ApprovalCard block={block} />;
    case 'error':
      return (
        <p class="notice error" role="alert">
          {block.message} <span class="muted">({block.code})</span>
        </p>
      );
  }
}

function TurnFooter({ turn }: { turn: Turn }) {
  const done = turn.done;
  if (done === undefined) {
    if (turn.retry === undefined) return null;
    const of = turn.retry.maxAttempts !== undefined ? ` of ${turn.retry.maxAttempts}` : '';
    return (
      <p class="notice retry" role="status">
        Retrying (attempt {turn.retry.attempt}
        {of})… <span class="muted">{turn.retry.reason}</span>
      </p>
    );
  }
  const reason = turnEndText(turn);
  const usage = done.usage;
  const facts = [
    usage !== undefined
      ? `${usage.inputTokens.toLocaleString()} in · ${usage.outputTokens.toLocaleString()} out tokens`
      : null,
    done.costUsd !== undefined ? formatCost(done.costUsd) : null,
    done.durationMs !== undefined ? formatDuration(done.durationMs) : null,
  ].filter((x) => x !== null);
  return (
    <>
      {reason !== null && <p class={`notice stop-${done.stopReason}`}>{reason}</p>}
      {facts.length > 0 && <p class="turn-usage">{facts.join(' · ')}</p>}
    </>
  );
}

/** `author` names who wrote the user message: "You" for one's own session, else its owner. */
export const TurnView = memo(function TurnView({ turn, author }: { turn: Turn; author: string }) {
  const running = turn.done === undefined && turn.user !== undefined;
  return (
    <article
      class="turn"
      data-message-id={turn.messageId ?? undefined}
      data-state={turn.done !== undefined ? 'done' : running ? 'running' : undefined}
    >
      {turn.user !== undefined && (
        <div class="msg user">
          <div class="msg-author">{author}</div>
          <p class="user-text">{turn.user.text}</p>
        </div>
      )}
      {(turn.blocks.length > 0 || turn.done !== undefined || turn.retry !== undefined || running) && (
        <div class="msg assistant">
          <div class="msg-author">Agent</div>
          {turn.blocks.map((b, i) => (
            <BlockView key={i} block={b} running={running} />
          ))}
          {running && turn.blocks.length === 0 && turn.retry === undefined && (
            <p class="typing" role="status" aria-label="The agent is working">
              <span class="spinner" /> Working…
            </p>
          )}
          <TurnFooter turn={turn} />
        </div>
      )}
    </article>
  );
});
