import type { AgentCodec } from '@switchyard/protocol';
import { piCommand, piSessionNamed, type WarmUpStep } from './warm-up.ts';

// A pi started before its session's welcome (a pooled runner's, or a fresh session's whose welcome
// then brought files) takes on what the welcome restored without a restart (docs/DESIGN.md
// "Runner behaviour (serve)", "pi reloads instead of restarting"). pi builds its whole runtime again
// on `switch_session` and `new_session` (settings with the workspace's `.pi/`, extensions, the
// tools' working directory), as at a start: `switch_session` loads the restored transcript and
// appends to it from then on, `new_session` starts an empty conversation over the workspace as it
// is now. Then `get_state` names the session file, the transcript from then on. claude has
// neither: its conversation is fixed at its start (`--resume`), so a claude is replaced instead.

let counter = 0;

/** The steps that reload pi: onto the restored transcript at `sessionPath`, or a new conversation. */
export function piReloadSteps(codec: AgentCodec, sessionPath: string | undefined): WarmUpStep[] {
  const id = `sy-reload-${process.pid}-${++counter}`;
  return [
    sessionPath === undefined
      ? piCommand(id, { type: 'new_session' })
      : piCommand(id, { type: 'switch_session', sessionPath }),
    piSessionNamed(codec),
  ];
}
