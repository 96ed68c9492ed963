// The Changes view of the files panel: what the agent (and people) changed in the workspace since
// its starting point (the repository clone, or an empty workspace), from the diff route. A file
// list with +/− counts, then each file's hunks; text is rendered as text, never as HTML.
import { useEffect, useState } from 'preact/hooks';
import { describeError, rawRequest } from '../api/client.ts';
import { ErrorText } from '../ui/messages.tsx';
import { clipHunks, diffUrl, type FileChange, parseWorkspaceDiff, type WorkspaceChanges } from './diff.ts';

const KIND_LABEL: Record<FileChange['kind'], string> = {
  added: 'added',
  deleted: 'deleted',
  modified: 'modified',
  mode: 'mode changed',
};

const anchor = (i: number) => `change-${i}`;

function Counts({ f }: { f: FileChange }) {
  if (f.binary) return <span class="muted">binary</span>;
  return (
    <span class="diff-counts">
      <span class="diff-plus">+{f.additions}</span> <span class="diff-minus">−{f.deletions}</span>
    </span>
  );
}

function FileDiff({ f, index }: { f: FileChange; index: number }) {
  // A huge file would cost the page more than it tells a reader; the .diff download has it all.
  const { hunks, hidden } = clipHunks(f.hunks);
  return (
    <section class="diff-file" id={anchor(index)} aria-label={`Changes to ${f.path}`}>
      <header>
        <span class={`diff-kind ${f.kind}`}>{KIND_LABEL[f.kind]}</span>
        <span class="diff-path">{f.path}</span>
        {f.modeChange !== null && <span class="muted">mode {f.modeChange}</span>}
        <Counts f={f} />
      </header>
      {f.binary && <p class="muted diff-note">Binary file, or larger than 1 MiB: its content is not shown.</p>}
      {!f.binary && f.hunks.length === 0 && f.kind !== 'mode' && <p class="muted diff-note">Empty file.</p>}
      {hunks.length > 0 && (
        <table class="diff-lines">
          {hunks.map((h) => (
            <tbody key={h.header}>
              <tr class="diff-hunk">
                <td colSpan={3}>{h.header}</td>
              </tr>
              {h.lines.map((l, i) => (
                <tr key={i} class={`diff-${l.kind}`}>
                  <td class="diff-no">{l.old ?? ''}</td>
                  <td class="diff-no">{l.new ?? ''}</td>
                  <td class="diff-text">
                    {l.kind === 'add' ? '+' : l.kind === 'del' ? '−' : l.kind === 'note' ? '\\' : ' '}
                    {l.kind === 'note' ? ` ${l.text}` : l.text}
                  </td>
                </tr>
              ))}
            </tbody>
          ))}
        </table>
      )}
      {hidden > 0 && (
        <p class="muted diff-note">
          {hidden} more {hidden === 1 ? 'line' : 'lines'} not shown here: download the .diff to see them.
        </p>
      )}
    </section>
  );
}

export function ChangesView({ sessionId, refreshKey }: { sessionId: string; refreshKey: unknown }) {
  const [changes, setChanges] = useState<WorkspaceChanges | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    try {
      setChanges(parseWorkspaceDiff(await (await rawRequest('GET', diffUrl(sessionId))).text()));
      setError(null);
    } catch (e) {
      setError(describeError(e));
    }
  };

  // Reloaded after every save the stream announces (workspace.saved).
  useEffect(() => {
    void load();
  }, [sessionId, refreshKey]);

  const files = changes?.files ?? [];
  const added = files.reduce((n, f) => n + f.additions, 0);
  const removed = files.reduce((n, f) => n + f.deletions, 0);
  return (
    <div class="changes-view">
      <div class="files-actions">
        {changes !== null && files.length > 0 && (
          <span>
            {files.length} {files.length === 1 ? 'file' : 'files'} changed, <span class="diff-plus">+{added}</span>{' '}
            <span class="diff-minus">−{removed}</span>
          </span>
        )}
        <a href={diffUrl(sessionId)} download={`session-${sessionId}.diff`}>
          Download .diff
        </a>
        <button type="button" class="link-button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <ErrorText message={error} />
      {changes === null && error === null && <p class="muted">Loading…</p>}
      {changes !== null && files.length === 0 && <p class="muted">No changes yet.</p>}
      {files.length > 0 && (
        <ul class="diff-index" aria-label="Changed files">
          {files.map((f, i) => (
            <li key={f.path}>
              <span class={`diff-kind ${f.kind}`}>{f.kind === 'mode' ? 'M' : f.kind[0]?.toUpperCase()}</span>
              <button
                type="button"
                class="link-button"
                onClick={() => document.getElementById(anchor(i))?.scrollIntoView({ block: 'nearest' })}
              >
                {f.path}
              </button>{' '}
              <Counts f={f} />
            </li>
          ))}
        </ul>
      )}
      {changes?.truncated != null && (
        <p class="diff-truncated" role="status">
          {changes.truncated.replace(/^# /, '')}
        </p>
      )}
      {files.map((f, i) => (
        <FileDiff key={f.path} f={f} index={i} />
      ))}
    </div>
  );
}
