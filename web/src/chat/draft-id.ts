// One clientMessageId per draft. A resend of the same draft after a network error carries the
// first attempt's id, so the edge answers it as a duplicate instead of starting a second turn; a
// changed draft gets a new id. The id is looked up from the draft itself at send time: renewed by
// an effect after an edit's render instead, it lagged behind a send that came right after the edit
// (the first attempt went out with the previous draft's id, its resend with a new one).

export interface DraftIds {
  /** The id of this draft: the same as last time while the text and images are the same. */
  idFor(text: string, images: readonly unknown[]): string;
  /** The draft was accepted: whatever is sent next is a new message, even with the same text. */
  sent(): void;
}

export function draftIds(newId: () => string = () => crypto.randomUUID()): DraftIds {
  // Images are compared by array identity: the composer replaces its array on every change.
  let current: { text: string; images: readonly unknown[]; id: string } | undefined;
  return {
    idFor(text, images) {
      if (current === undefined || current.text !== text || current.images !== images) {
        current = { text, images, id: newId() };
      }
      return current.id;
    },
    sent() {
      current = undefined;
    },
  };
}
