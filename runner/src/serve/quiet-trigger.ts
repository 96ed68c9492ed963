// Runs an action once its owner has had no input for a while: the runner's heap compaction after
// a turn waits for that (docs/DESIGN.md "Runner memory" → "Between turns"), so a script that sends
// its next message the moment a turn ends does not find the runner's thread in a collection.

export class QuietTrigger {
  private lastInput = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;

  private readonly quietMs: number;
  private readonly action: () => void;
  private readonly now: () => number;

  constructor(quietMs: number, action: () => void, now: () => number = () => performance.now()) {
    this.quietMs = quietMs;
    this.action = action;
    this.now = now;
  }

  /** Something happened: the quiet starts over. */
  input(): void {
    this.lastInput = this.now();
  }

  /** Run the action once there has been no input for `quietMs` (at once if there has not been). Armed once at a time. */
  arm(): void {
    if (this.timer === undefined) this.check();
  }

  private readonly check = (): void => {
    const quiet = this.now() - this.lastInput;
    if (quiet < this.quietMs) {
      this.timer = setTimeout(this.check, this.quietMs - quiet);
      // The wait never keeps the process alive.
      this.timer.unref?.();
      return;
    }
    this.timer = undefined;
    this.action();
  };
}
