// One session: its header (title, backend, runner state, connection), the conversation folded
// from the live event stream, and the composer for its owner.
import type { Presence } from '@switchyard/protocol';
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, isApiError, type Schemas } from '../api/client.ts';
import { useMe } from '../auth/me.ts';
import { navigate } from '../router.ts';
import { refreshSessions, removeSession, upsertSession } from '../sessions/session-list-store.ts';
import { sessionTitle } from '../sessions/session-sidebar.tsx';
import type { StreamStatus } from '../stream/session-stream.ts';
import { Confirm } from '../ui/confirm.tsx';
import { EyeIcon } from '../ui/icons.tsx';
import { StateBadge } from '../ui/state-badge.tsx';
import { ApprovalContext } from './approval-card.tsx';
import { Composer } from './composer.tsx';
import { ConversationLog } from './conversation-log.tsx';
import { runningTurn } from './conversation.ts';
import { useConversation } from './use-conversation.ts';
import { useOwnerName } from './owner-name.ts';
import { ErrorText } from '../ui/messages.tsx';
import { FilesPanel } from '../files/files-panel.tsx';

type Detail = Schemas['SessionDetail'];

/** The API's default; replaced by the server's value once /api/settings answers. */
const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

function LinkStatus({ link }: { link: StreamStatus }) {
  if (link.state === 'live') return null;
  const text =
    link.state === 'connecting'
      ? 'Connecting…'
      : link.state === 'reconnecting'
        ? `Reconnecting… (${link.reason})`
        : link.reason === 'gone'
          ? 'This session was deleted.'
          : link.reason === 'unauthenticated'
            ? 'Signed out.'
            : null;
  if (text === null) return null;
  return (
    <p class={`link-status link-${link.state}`} role="status">
      {text}
    </p>
  );
}

export function ChatPage({ sessionId }: { sessionId: string }) {
  const me = useMe();
  const [detail, setDetail] = useState<Detail | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [maxBytes, setMaxBytes] = useState(DEFAULT_MAX_MESSAGE_BYTES);
  const [maxFileBytes, setMaxFileBytes] = useState<number | null>(null);
  const [renaming, setRenaming] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  /** Sent, accepted, and not yet back as message.user: shown right away. */
  const [pending, setPending] = useState<Array<{ messageId: string; text: string }>>([]);
  const { conv, link, presence } = useConversation(sessionId);
  const ownerName = useOwnerName(detail?.ownerId, me);

  useEffect(() => {
    call(api.GET('/api/sessions/{id}', { params: { path: { id: sessionId } } }))
      .then(setDetail)
      .catch((e: unknown) => setLoadError(isApiError(e) && e.status === 404 ? 'No such session.' : describeError(e)));
    call(api.GET('/api/settings'))
      .then((s) => {
        if (typeof s.maxMessageBytes === 'number') setMaxBytes(s.maxMessageBytes);
        if (typeof s.maxFileBytes === 'number') setMaxFileBytes(s.maxFileBytes);
      })
      .catch(() => undefined);
  }, [sessionId]);

  // The list's state pills follow this session's runner.
  useEffect(() => {
    if (conv.state !== null) void refreshSessions();
  }, [conv.state]);

  if (loadError !== null) {
    return (
      <div class="empty-state">
        <h1>{loadError}</h1>
        <p>
          <a href="/">Back to sessions</a>
        </p>
      </div>
    );
  }
  if (detail === null) return <div class="chat" aria-busy="true" />;

  // A sent message shows at once; its message.user event replaces it when it arrives.
  const shown = new Set(conv.turns.filter((t) => t.user !== undefined).map((t) => t.messageId));
  const unconfirmed = pending.filter((p) => !shown.has(p.messageId));
  const owner = detail.ownerId === me.id;
  // Whose messages these are: "You" in one's own session, else the owner by name.
  const author = owner ? 'You' : (ownerName ?? 'Owner');
  const state = conv.state ?? detail.state;
  const stateReason = conv.state !== null ? conv.stateReason : detail.stateReason;
  const running = runningTurn(conv) !== undefined || unconfirmed.length > 0;

  const rename = async (title: string) => {
    setRenaming(false);
    try {
      const s = await call(
        api.PATCH('/api/sessions/{id}', {
          params: { path: { id: sessionId } },
          body: { title: title.trim() === '' ? null : title },
        }),
      );
      setDetail({ ...detail, title: s.title, updatedAt: s.updatedAt });
      upsertSession(s);
      setActionError(null);
    } catch (e) {
      setActionError(describeError(e));
    }
  };
  const remove = async () => {
    setConfirmDelete(false);
    try {
      await call(api.DELETE('/api/sessions/{id}', { params: { path: { id: sessionId } } }));
      removeSession(sessionId);
      navigate('/', { replace: true });
    } catch (e) {
      setActionError(describeError(e));
    }
  };

  return (
    <div class="chat">
      <header class="chat-head">
        <div class="chat-title-row">
          {renaming ? (
            <RenameForm initial={detail.title ?? ''} onSave={rename} onCancel={() => setRenaming(false)} />
          ) : (
            <h1 class="chat-title">{sessionTitle(detail)}</h1>
          )}
          {owner && !renaming && (
            <div class="chat-actions">
              <button type="button" class="btn small" onClick={() => setRenaming(true)}>
                Rename
              </button>
              <button type="button" class="btn small danger-outline" onClick={() => setConfirmDelete(true)}>
                Delete
              </button>
            </div>
          )}
        </div>
        <div class="chat-meta">
          <span class="backend-tag">{detail.backend}</span>
          {conv.model !== null && <span class="muted">{conv.model}</span>}
          {detail.repository !== null && (
            // Plain text, not a link: what the session started from, never a way off the page.
            <span class="session-repo" data-testid="session-repository">
              From <code>{detail.repository.url}</code>
              {detail.repository.ref !== undefined && (
                <>
                  {' '}
                  at <code>{detail.repository.ref}</code>
                </>
              )}
            </span>
          )}
          <Watching presence={presence} me={me.username} />
          <span class="runner-state">
            Runner: <StateBadge state={state} />
            {stateReason !== null && (state === 'failed' || state === 'stopped' || state === 'starting') && (
              <span class="muted"> {stateReason}</span>
            )}
          </span>
        </div>
        {!owner && <p class="notice readonly">Read-only: this session belongs to {ownerName ?? 'another user'}.</p>}
        <ErrorText message={actionError} />
        <LinkStatus link={link} />
      </header>
      <FilesPanel sessionId={sessionId} canWrite={owner} refreshKey={conv.workspaceSaved} maxFileBytes={maxFileBytes} />
      <ApprovalContext.Provider value={{ sessionId, canAnswer: owner }}>
        <ConversationLog conv={conv} pending={unconfirmed} author={author} />
      </ApprovalContext.Provider>
      {owner && (
        <Composer
          sessionId={sessionId}
          running={running}
          runnerStopped={state === 'stopped'}
          maxMessageBytes={maxBytes}
          onSent={(messageId, text) =>
            setPending((ps) => [...ps.filter((p) => !shown.has(p.messageId)), { messageId, text }])
          }
        />
      )}
      {confirmDelete && (
        <Confirm
          title="Delete this session?"
          body="Its runner is stopped and its conversation is deleted for good."
          confirm="Delete session"
          danger
          onConfirm={remove}
          onCancel={() => setConfirmDelete(false)}
        />
      )}
    </div>
  );
}

/** Who has this session open: "Watching: you (2 tabs), dave". */
function Watching({ presence, me }: { presence: Presence | null; me: string }) {
  if (presence === null || presence.viewers.length === 0) return null;
  const people = [...presence.viewers].sort((a, b) => Number(b.name === me) - Number(a.name === me));
  const text = people
    .map((v) => `${v.name === me ? 'you' : v.name}${v.streams > 1 ? ` (${v.streams} tabs)` : ''}`)
    .join(', ');
  return (
    <span class="watching" role="status" aria-label={`Watching now: ${text}`} title="who has this session open">
      <EyeIcon /> {text}
    </span>
  );
}

function RenameForm({
  initial,
  onSave,
  onCancel,
}: {
  initial: string;
  onSave: (t: string) => void;
  onCancel: () => void;
}) {
  const [value, setValue] = useState(initial);
  return (
    <form
      class="rename-form"
      onSubmit={(e) => {
        e.preventDefault();
        onSave(value);
      }}
    >
      <label class="sr-only" for="rename-input">
        Session title
      </label>
      <input
        id="rename-input"
        value={value}
        maxLength={200}
        autoFocus
        onInput={(e) => setValue(e.currentTarget.value)}
        onKeyDown={(e) => e.key === 'Escape' && onCancel()}
      />
      <button type="submit" class="btn small primary">
        Save title
      </button>
      <button type="button" class="btn small" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}
