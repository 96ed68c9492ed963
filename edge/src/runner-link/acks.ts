import { isOpen } from './sockets.ts';

/**
 * When the hub acks a runner's frames (DESIGN "Runner link" → "Acks, together"). An ack only lets
 * the runner drop frames from its buffer (and end its wait for them at shutdown); each one is a
 * WebSocket message through the Worker to the runner, which in a streaming turn cost workerd about
 * a seventh of its CPU per delta. So while a turn streams, frames are acked together: one ack,
 * `delayMs` after the first frame it covers; a frame that ends a turn (and a transcript) is acked
 * at once. Acks are cumulative (the highest seq the hub holds, read when the ack goes out), so one
 * covers every frame before it. A delay of 0 acks every frame at once.
 */
export class FrameAcks {
  #pending: { ws: WebSocket; timer: ReturnType<typeof setTimeout> } | undefined;
  readonly #send: (ws: WebSocket, runnerId: string) => void;
  readonly #delayMs: () => number;

  constructor(send: (ws: WebSocket, runnerId: string) => void, delayMs: () => number) {
    this.#send = send;
    this.#delayMs = delayMs;
  }

  /** Acks what the hub holds now, and whatever a pending ack would have covered. */
  now(ws: WebSocket, runnerId: string): void {
    this.cancel();
    if (isOpen(ws)) this.#send(ws, runnerId);
  }

  /** Acks within `delayMs`, together with every frame stored until then. */
  later(ws: WebSocket, runnerId: string): void {
    if (this.#pending?.ws === ws) return;
    const delay = this.#delayMs();
    if (delay <= 0) return this.now(ws, runnerId);
    this.cancel();
    const timer = setTimeout(() => {
      this.#pending = undefined;
      if (isOpen(ws)) this.#send(ws, runnerId);
    }, delay);
    this.#pending = { ws, timer };
  }

  cancel(): void {
    if (this.#pending === undefined) return;
    clearTimeout(this.#pending.timer);
    this.#pending = undefined;
  }
}
