/** An error a person must read: announced at once by screen readers. */
export function ErrorText({ message, class: extra }: { message: string | null; class?: string }) {
  if (message === null) return null;
  return (
    <p class={extra === undefined ? 'form-error' : `form-error ${extra}`} role="alert">
      {message}
    </p>
  );
}

/** A confirmation of what just happened: announced politely. */
export function Notice({ message, class: extra }: { message: string | null; class?: string }) {
  if (message === null) return null;
  return (
    <p class={extra === undefined ? 'notice ok' : `notice ok ${extra}`} role="status">
      {message}
    </p>
  );
}
