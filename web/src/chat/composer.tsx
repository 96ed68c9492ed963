// The message box. The draft is cleared only once the server accepted it (202): a refusal
// (409 busy, 413 too large, a network error) keeps every character and image. A draft keeps
// one clientMessageId until its text or images change (draft-id.ts), so resending after a
// network error can never start a second turn.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, call, isApiError } from '../api/client.ts';
import { useAutoGrow } from './auto-grow.ts';
import { draftIds } from './draft-id.ts';
import { composerHint, enterSends, useTouchTyping } from './enter-key.ts';
import { type Attachment, bodyBytes, checkFiles, readAttachment } from './images.ts';
import { formatBytes } from '../ui/format.ts';
import { PaperclipIcon } from '../ui/icons.tsx';
import { ErrorText } from '../ui/messages.tsx';

interface ComposerProps {
  sessionId: string;
  running: boolean;
  /**
   * The session's runner is `stopped` (or was never started): typing starts one. Not after a
   * failure, which a start while the person types would likely repeat: Send retries.
   */
  runnerStopped: boolean;
  maxMessageBytes: number;
  onSent: (messageId: string, text: string) => void;
}

/** Why a send was refused; `busy` (409) is over once the running turn ends. */
type SendProblem = { message: string; busy: boolean };

const BUSY =
  'The agent is still busy with the previous message. Your message is kept: send it when the turn ends, or press Stop.';

function sendError(e: unknown): SendProblem {
  if (isApiError(e) && e.status === 409) return { message: BUSY, busy: true };
  return { message: refusal(e), busy: false };
}

function refusal(e: unknown): string {
  if (!isApiError(e)) return 'Could not send; your message is kept.';
  if (e.status === 0) return 'Could not reach the server. Your message is kept; press Send to try again.';
  if (e.code === 'runner_limit')
    return e.field === 'maxLiveRunnersPerUser'
      ? 'Too many of your sessions have an agent running right now. An agent stops once its session has sat unused for a while: send again then, or delete a session you no longer need. Your message is kept.'
      : 'Too many agents are running for everyone right now. Send again in a little while; your message is kept.';
  if (e.status === 429) return `${e.message}. Your message is kept.`;
  return `${e.field !== undefined ? `${e.field}: ` : ''}${e.message}. Your message is kept.`;
}

export function Composer({ sessionId, running, runnerStopped, maxMessageBytes, onSent }: ComposerProps) {
  const [text, setText] = useState('');
  const [images, setImages] = useState<Attachment[]>([]);
  const [problem, setProblem] = useState<SendProblem | null>(null);
  const setError = (message: string | null) => setProblem(message === null ? null : { message, busy: false });
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const ids = useMemo(() => draftIds(), []);
  const fileInput = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLTextAreaElement>(null);
  const touch = useTouchTyping();
  useAutoGrow(box, text);

  // Once the turn is over, "still busy" is no longer true: the kept message can go now.
  useEffect(() => {
    if (running) return;
    setStopping(false);
    setProblem((p) => (p?.busy === true ? null : p));
  }, [running]);
  useEffect(
    () => () => {
      for (const i of images) URL.revokeObjectURL(i.previewUrl);
    },
    [],
  );
  // Opening a session puts the cursor in its message box (autofocus only works on page load).
  useEffect(() => box.current?.focus(), []);

  // The first keystroke into a stopped session starts its runner, so the start overlaps the
  // typing (docs/DESIGN.md "Starting ahead"). Once per rest; a refusal (a runner cap) is left
  // for Send to explain, since sending would meet it too.
  const startAsked = useRef(false);
  useEffect(() => {
    if (!runnerStopped) startAsked.current = false;
  }, [runnerStopped]);
  const startAhead = () => {
    if (!runnerStopped || startAsked.current) return;
    startAsked.current = true;
    api.POST('/api/sessions/{id}/start', { params: { path: { id: sessionId } } }).catch(() => undefined);
  };

  const addFiles = async (files: File[]) => {
    if (files.length === 0) return;
    const budget = maxMessageBytes - bodyBytes(text, images);
    const problem = checkFiles(files, images.length, budget);
    if (problem !== null) {
      setError(problem);
      return;
    }
    setError(null);
    const read = await Promise.all(files.map(readAttachment));
    setImages((cur) => [...cur, ...read]);
  };

  const removeImage = (id: string) => {
    setImages((cur) => {
      const gone = cur.find((i) => i.id === id);
      if (gone !== undefined) URL.revokeObjectURL(gone.previewUrl);
      return cur.filter((i) => i.id !== id);
    });
  };

  const send = async () => {
    const body = text.trim();
    if (body === '' || sending) return;
    const size = bodyBytes(text, images);
    if (size > maxMessageBytes) {
      setError(
        `This message is ${formatBytes(size)}; the limit is ${formatBytes(maxMessageBytes)}. Remove an image or shorten the text.`,
      );
      return;
    }
    setSending(true);
    setError(null);
    try {
      const r = await call(
        api.POST('/api/sessions/{id}/messages', {
          params: { path: { id: sessionId } },
          body: {
            text,
            clientMessageId: ids.idFor(text, images),
            ...(images.length > 0 && { images: images.map((i) => ({ mediaType: i.mediaType, data: i.data })) }),
          },
        }),
      );
      ids.sent();
      onSent(r.messageId, text);
      for (const i of images) URL.revokeObjectURL(i.previewUrl);
      setText('');
      setImages([]);
    } catch (e) {
      setProblem(sendError(e));
    } finally {
      setSending(false);
      box.current?.focus();
    }
  };

  const stop = async () => {
    setStopping(true);
    try {
      await call(api.POST('/api/sessions/{id}/interrupt', { params: { path: { id: sessionId } } }));
    } catch (e) {
      setStopping(false);
      if (!(isApiError(e) && e.status === 409)) setError(isApiError(e) ? e.message : 'Could not stop the turn.');
    }
  };

  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        void addFiles([...(e.dataTransfer?.files ?? [])]);
      }}
    >
      <ErrorText message={problem?.message ?? null} />
      {images.length > 0 && (
        <ul class="attachments" aria-label="Attached images">
          {images.map((i) => (
            <li key={i.id}>
              <img src={i.previewUrl} alt={i.name} />
              <button
                type="button"
                class="remove-attachment"
                aria-label={`Remove ${i.name}`}
                onClick={() => removeImage(i.id)}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="composer-row">
        <button
          type="button"
          class="icon-btn"
          aria-label="Attach images"
          title="Attach images"
          onClick={() => fileInput.current?.click()}
        >
          <PaperclipIcon />
        </button>
        <input
          ref={fileInput}
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          multiple
          hidden
          onChange={(e) => {
            void addFiles([...(e.currentTarget.files ?? [])]);
            e.currentTarget.value = '';
          }}
        />
        <label class="sr-only" for="message-box">
          Message
        </label>
        <textarea
          id="message-box"
          ref={box}
          rows={1}
          placeholder="Message the agent…"
          aria-describedby="composer-hint"
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            if (e.currentTarget.value.trim() !== '') startAhead();
          }}
          onKeyDown={(e) => {
            if (enterSends(e, touch)) {
              e.preventDefault();
              void send();
            }
          }}
          onPaste={(e) => {
            const files = [...(e.clipboardData?.files ?? [])];
            if (files.length > 0) {
              e.preventDefault();
              void addFiles(files);
            }
          }}
        />
        {running && (
          <button type="button" class="btn danger" onClick={stop} disabled={stopping}>
            Stop
          </button>
        )}
        <button type="submit" class="btn primary" disabled={sending || text.trim() === ''}>
          Send
        </button>
      </div>
      <p id="composer-hint" class="composer-hint">
        {composerHint(touch)}
      </p>
    </form>
  );
}
