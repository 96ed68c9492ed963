import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, fieldMessage, isApiError } from '../api/client.ts';
import { ErrorText } from './messages.tsx';

/** A modal confirmation on the native <dialog> (focus trapping and Escape come with it). */
export function Confirm(props: {
  title: string;
  body: string;
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="confirm-title" onCancel={props.onCancel} onClose={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <p>{props.body}</p>
      <div class="dialog-actions">
        <button type="button" class="btn" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'btn danger' : 'btn primary'} onClick={props.onConfirm}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}

/**
 * A confirmation that the server asks the signed-in user's password for (an action that grants
 * access). `children` are the action's own fields, shown above the password. The dialog stays
 * open while `onConfirm` runs and shows what it rejects with beside the field at fault, so a
 * mistyped password is retyped here, not the whole action redone; the caller closes it on success.
 */
export function ConfirmWithPassword(props: {
  title: string;
  body: string;
  confirm: string;
  children?: ComponentChildren;
  onConfirm: (currentPassword: string) => Promise<void>;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ field: boolean; message: string } | null>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm(password);
    } catch (err) {
      const onPassword = isApiError(err) && err.field === 'currentPassword';
      setError({ field: onPassword, message: onPassword ? fieldMessage(err) : describeError(err) });
      setBusy(false);
    }
  };
  return (
    <dialog
      ref={ref}
      class="dialog form-dialog"
      aria-labelledby="confirm-title"
      onCancel={props.onCancel}
      onClose={props.onCancel}
    >
      <form onSubmit={(e) => void submit(e)}>
        <h2 id="confirm-title">{props.title}</h2>
        <p>{props.body}</p>
        {props.children}
        <label>
          Your password
          <input
            type="password"
            required
            autocomplete="current-password"
            autoFocus={props.children === undefined}
            value={password}
            aria-invalid={error?.field === true ? true : undefined}
            aria-describedby={error?.field === true ? 'confirm-password-error' : undefined}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          {error?.field === true && (
            <span id="confirm-password-error" class="field-error" role="alert">
              {error.message}
            </span>
          )}
        </label>
        {error?.field === false && <ErrorText message={error.message} />}
        <div class="dialog-actions">
          <button type="button" class="btn" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={busy}>
            {busy ? 'Checking…' : props.confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}
