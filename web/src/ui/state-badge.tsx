import type { SessionState } from '@switchyard/protocol';

const LABEL: Record<SessionState, string> = {
  starting: 'starting',
  ready: 'ready',
  busy: 'working',
  idle: 'idle',
  stopping: 'stopping',
  stopped: 'stopped',
  failed: 'failed',
};

/** The runner's state as a coloured pill; the text is always there (colour is never the only cue). */
export function StateBadge({ state }: { state: SessionState | null }) {
  if (state === null) return null;
  return <span class={`badge state-${state}`}>{LABEL[state]}</span>;
}
