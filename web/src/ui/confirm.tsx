import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

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
 * access). `children` are the action's own fields, shown above the password.
 */
export function ConfirmWithPassword(props: {
  title: string;
  body: string;
  confirm: string;
  children?: ComponentChildren;
  onConfirm: (currentPassword: string) => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [password, setPassword] = useState('');
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      class="dialog form-dialog"
      aria-labelledby="confirm-title"
      onCancel={props.onCancel}
      onClose={props.onCancel}
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          props.onConfirm(password);
        }}
      >
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
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <div class="dialog-actions">
          <button type="button" class="btn" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" class="btn primary">
            {props.confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}
