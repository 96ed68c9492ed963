import { HubToRunnerSchema, RunnerCloseCode, type HubToRunner } from '@switchyard/protocol';
import type { LaunchRecord, Meta } from '../hub/lifecycle.ts';

// The runner's side of the hub's sockets: what each runner socket carries across hibernation
// (its attachment), which socket is the live runner, admission of a new link, and sending.

export type RunnerAuth = { kind: 'bootstrap' } | { kind: 'credential'; runnerId: string };

export interface RunnerAttachment {
  kind: 'runner';
  launchId: string;
  /** Set by the welcome; null while the link has not said hello. */
  runnerId: string | null;
  /** What the link was opened with; a credential names the only runner id it may say hello as. */
  auth?: RunnerAuth;
}

const OPEN = 1;

export const BOOTSTRAP_SPENT = 'the launch token was already exchanged; reconnect with the credential from welcome';

export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason.slice(0, 120));
  } catch {
    // already closed
  }
}

export function isOpen(ws: WebSocket): boolean {
  return ws.readyState === OPEN;
}

export function attachmentOf(ws: WebSocket): RunnerAttachment | null {
  return ws.deserializeAttachment() as RunnerAttachment | null;
}

/** The token kind the Worker verified, passed on in headers (the hub never sees the token). */
export function runnerAuthFrom(headers: Headers): RunnerAuth {
  const credentialFor = headers.get('X-Switchyard-Token-Runner');
  return headers.get('X-Switchyard-Token-Kind') === 'credential' && credentialFor !== null
    ? { kind: 'credential', runnerId: credentialFor }
    : { kind: 'bootstrap' };
}

/**
 * The open, welcomed socket of the current launch's runner (other than `except`), if its link is
 * up. `except` is the socket that just closed, when asking whether another link took over.
 */
export function liveRunner(
  sockets: WebSocket[],
  launch: LaunchRecord | null,
  except?: WebSocket,
): WebSocket | undefined {
  if (launch === null || !launch.connected || launch.runnerId === null) return undefined;
  return sockets.find((ws) => {
    if (ws === except || !isOpen(ws)) return false;
    const a = attachmentOf(ws);
    return a?.launchId === launch.id && a.runnerId === launch.runnerId;
  });
}

/** Why a new runner link is refused before its hello (a close code and reason), or null to accept it. */
export function refusal(meta: Meta, launchId: string, auth: RunnerAuth): { code: number; reason: string } | null {
  const launch = meta.launch;
  if (meta.session === null || launch === null)
    return { code: RunnerCloseCode.sessionGone, reason: 'this session has no runner to serve' };
  if (launch.id !== launchId) return { code: RunnerCloseCode.superseded, reason: 'another runner serves this session' };
  if (auth.kind === 'bootstrap' && launch.welcomedAt !== null)
    return { code: RunnerCloseCode.unauthorized, reason: BOOTSTRAP_SPENT };
  return null;
}

export function sendToRunner(ws: WebSocket, msg: HubToRunner): void {
  try {
    ws.send(JSON.stringify(HubToRunnerSchema.parse(msg)));
  } catch (err) {
    console.error('session hub: send to runner failed:', err instanceof Error ? err.message : String(err));
  }
}
