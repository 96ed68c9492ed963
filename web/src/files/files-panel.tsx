// The session's workspace files: the tree with sizes, upload (button or drag and drop), download
// one file or everything, delete (after asking), and text files shown inline in place of the tree
// (escaped, never rendered as HTML); beside it the Changes view (changes-view.tsx), the diff
// against the workspace's starting point. Everything goes through the Files API, so it works with
// or without a live runner.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, isApiError, rawRequest } from '../api/client.ts';
import { Confirm } from '../ui/confirm.tsx';
import { formatBytes, relativeTime } from '../ui/format.ts';
import { ErrorText } from '../ui/messages.tsx';
import { ChangesView } from './changes-view.tsx';
import './files-panel.css';
import {
  archiveUrl,
  byFileLimit,
  fileTree,
  fileUrl,
  type FileRow,
  tooLargeMessage,
  uploadPath,
  viewable,
} from './files.ts';

export function FilesPanel({
  sessionId,
  canWrite,
  refreshKey,
  maxFileBytes,
}: {
  sessionId: string;
  canWrite: boolean;
  refreshKey: unknown;
  /** The server's limit per file; null until /api/settings answered. */
  maxFileBytes: number | null;
}) {
  const [open, setOpen] = useState(false);
  const [files, setFiles] = useState<FileRow[] | null>(null);
  const [total, setTotal] = useState(0);
  /** What the last upload, delete or view could not do; kept across the reload that follows it. */
  const [error, setError] = useState<string | null>(null);
  /** Why the file list could not be read; cleared by the next read that works. */
  const [listError, setListError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [folder, setFolder] = useState('');
  const [viewing, setViewing] = useState<{ path: string; text: string } | null>(null);
  /** The file whose delete waits for the person's yes. */
  const [deleting, setDeleting] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const [tab, setTab] = useState<'files' | 'changes'>('files');
  const uploadInput = useRef<HTMLInputElement>(null);
  const viewer = useRef<HTMLElement>(null);
  /** The control to give focus back to when the viewer or the delete question closes. */
  const returnFocus = useRef<HTMLElement | null>(null);

  const load = async () => {
    try {
      const r = await rawRequest('GET', `/api/sessions/${sessionId}/files`);
      const body = (await r.json()) as { files: FileRow[]; totalBytes: number };
      setFiles(body.files);
      setTotal(body.totalBytes);
      setListError(null);
    } catch (e) {
      setListError(describeError(e));
    }
  };

  // Reloaded when opened and after every save the stream announces (workspace.saved).
  useEffect(() => {
    if (open) void load();
  }, [open, sessionId, refreshKey]);

  const upload = async (list: FileList | File[]) => {
    setBusy(true);
    const { fit, tooLarge } = byFileLimit([...list], maxFileBytes);
    const leftOut = tooLarge.length > 0 && maxFileBytes !== null ? tooLargeMessage(tooLarge, maxFileBytes) : null;
    setError(leftOut);
    try {
      for (const file of fit) await rawRequest('PUT', fileUrl(sessionId, uploadPath(folder, file.name)), file);
    } catch (e) {
      const failed = isApiError(e) && e.status === 413 ? `Too large: ${describeError(e)}` : describeError(e);
      setError(leftOut === null ? failed : `${leftOut} ${failed}`);
    } finally {
      setBusy(false);
      await load();
    }
  };

  const remove = async (path: string) => {
    setError(null);
    try {
      await rawRequest('DELETE', fileUrl(sessionId, path));
      if (viewing?.path === path) setViewing(null);
    } catch (e) {
      setError(describeError(e));
    }
    await load();
  };

  const view = async (path: string, opener: HTMLElement) => {
    setError(null);
    try {
      const r = await rawRequest('GET', fileUrl(sessionId, path));
      returnFocus.current = opener;
      setViewing({ path, text: await r.text() });
    } catch (e) {
      setError(describeError(e));
    }
  };

  // The viewer takes the tree's place; focus follows it (which also scrolls it into sight), and
  // goes back to the control that opened it when it closes (the tree stays mounted, only hidden).
  useEffect(() => {
    if (viewing !== null) viewer.current?.focus();
    else if (returnFocus.current?.isConnected) returnFocus.current.focus();
  }, [viewing?.path]);

  // Cancel gives focus back to the delete button. The dialog is removed, not closed, so the
  // browser does not; and only once it is gone, since nothing outside a modal dialog takes focus.
  const cancelled = useRef(false);
  useEffect(() => {
    if (deleting !== null || !cancelled.current) return;
    cancelled.current = false;
    if (returnFocus.current?.isConnected) returnFocus.current.focus();
  }, [deleting]);
  const closeConfirm = () => {
    cancelled.current = true;
    setDeleting(null);
  };

  return (
    <>
      <details
        class={`files-panel${dragging ? ' dragging' : ''}`}
        open={open}
        onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}
        onDragOver={(e) => {
          if (!canWrite) return;
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          if (!canWrite) return;
          e.preventDefault();
          setDragging(false);
          const dropped = e.dataTransfer?.files;
          if (dropped && dropped.length > 0) void upload(dropped);
        }}
      >
        <summary>Files{files !== null && ` (${files.length}, ${formatBytes(total)})`}</summary>
        <div class="files-tabs" role="tablist" aria-label="Workspace views">
          {(['files', 'changes'] as const).map((t) => (
            <button
              key={t}
              type="button"
              role="tab"
              aria-selected={tab === t}
              class={tab === t ? 'selected' : ''}
              onClick={() => setTab(t)}
            >
              {t === 'files' ? 'Files' : 'Changes'}
            </button>
          ))}
        </div>
        {open && tab === 'changes' && <ChangesView sessionId={sessionId} refreshKey={refreshKey} />}
        {tab === 'files' && viewing !== null && (
          <section
            ref={viewer}
            class="file-view"
            aria-label={`Viewing ${viewing.path}`}
            tabIndex={-1}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setViewing(null);
            }}
          >
            <div class="file-view-head">
              <button type="button" class="btn small" onClick={() => setViewing(null)}>
                ← Back to files
              </button>
              <span class="file-view-path">{viewing.path}</span>
              <a href={fileUrl(sessionId, viewing.path)} download>
                Download
              </a>
            </div>
            <pre>
              <code>{viewing.text}</code>
            </pre>
          </section>
        )}
        {tab === 'files' && (
          // Hidden, not removed, while a file is viewed: the tree keeps its place and the opener
          // gets focus back.
          <div hidden={viewing !== null}>
            <div class="files-actions">
              <a href={archiveUrl(sessionId)} download>
                Download all (.tar.gz)
              </a>
              <button type="button" class="link-button" onClick={() => void load()}>
                Refresh
              </button>
              {canWrite && (
                <>
                  <label class="files-folder">
                    Folder
                    <input
                      value={folder}
                      placeholder="(top level)"
                      aria-label="Upload into folder"
                      onInput={(e) => setFolder((e.currentTarget as HTMLInputElement).value)}
                    />
                  </label>
                  {/* A real button, so Tab reaches it; the hidden input only opens the chooser. */}
                  <button type="button" class="btn small" disabled={busy} onClick={() => uploadInput.current?.click()}>
                    {busy ? 'Uploading…' : 'Upload'}
                  </button>
                  <input
                    ref={uploadInput}
                    type="file"
                    multiple
                    hidden
                    disabled={busy}
                    aria-label="Upload files"
                    onChange={(e) => {
                      const input = e.currentTarget as HTMLInputElement;
                      if (input.files) void upload(input.files);
                      input.value = '';
                    }}
                  />
                  <span class="muted">or drop files here</span>
                </>
              )}
            </div>
            <ErrorText message={error ?? listError} />
            {files !== null && files.length === 0 && <p class="muted">No files yet.</p>}
            {files !== null && files.length > 0 && (
              <ul class="file-tree" aria-label="Workspace files">
                {fileTree(files).map((line) => (
                  <li
                    key={`${line.kind}:${line.path}`}
                    style={{ paddingLeft: `${line.depth * 16}px` }}
                    class={line.kind}
                  >
                    {line.kind === 'folder' ? (
                      <span class="file-name">
                        {line.name}/ <span class="muted">{formatBytes(line.size)}</span>
                      </span>
                    ) : (
                      <>
                        <a
                          class="file-name"
                          href={fileUrl(sessionId, line.path)}
                          download
                          title={`download ${line.path}`}
                        >
                          {line.name}
                        </a>
                        <span class="muted" title={line.modifiedAt}>
                          {formatBytes(line.size)} · {relativeTime(line.modifiedAt)}
                        </span>
                        <span class="file-actions">
                          {viewable(line.path, line.size) && (
                            <button
                              type="button"
                              class="link-button"
                              onClick={(e) => void view(line.path, e.currentTarget)}
                              aria-label={`View ${line.path}`}
                            >
                              view
                            </button>
                          )}
                          {canWrite && (
                            <button
                              type="button"
                              class="link-button danger"
                              onClick={(e) => {
                                returnFocus.current = e.currentTarget;
                                setDeleting(line.path);
                              }}
                              aria-label={`Delete ${line.path}`}
                            >
                              delete
                            </button>
                          )}
                        </span>
                      </>
                    )}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </details>
      {deleting !== null && (
        // The wrapper only scopes a style: a long file name wraps inside the app's dialog.
        <div class="files-confirm">
          <Confirm
            title="Delete this file?"
            body={`${deleting} is removed from the workspace for good.`}
            confirm="Delete file"
            danger
            onConfirm={() => {
              const path = deleting;
              setDeleting(null);
              void remove(path);
            }}
            onCancel={closeConfirm}
          />
        </div>
      )}
    </>
  );
}
