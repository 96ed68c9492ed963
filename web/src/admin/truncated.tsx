// A name or title in an admin table: one line cut with an ellipsis when it is too long, the whole
// text in its tooltip (admin.css shows two wrapped lines on a phone's card instead).
export function Truncated({ text }: { text: string }) {
  return (
    <span class="truncate" title={text}>
      {text}
    </span>
  );
}
