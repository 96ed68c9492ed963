import { initializeHooks, type AgentEvent, type Backend, type SpawnSpec } from '@switchyard/protocol';

/**
 * How the runner learns that a freshly spawned CLI reads its stdin. pi
 * answers the codec's `get_state` (a session.init event). claude prints
 * nothing until its first input, so it is asked an `initialize` control
 * request — what claude's own SDK sends first — and the response is the sign.
 * That request also registers the guard's tool-call hooks (`spec.toolHooks`),
 * so claude's handshake is what arms its guard: CliProcess refuses a message
 * to a guarded CLI before it.
 */
export interface Readiness {
  /** Written after the codec's init lines. */
  lines: string[];
  isReady(line: string | undefined, event: AgentEvent | undefined): boolean;
}

let counter = 0;

export function readinessFor(backend: Backend, spec: Pick<SpawnSpec, 'toolHooks'>): Readiness {
  if (backend === 'pi') {
    return { lines: [], isReady: (_line, event) => event?.type === 'session.init' };
  }
  const requestId = `sy-ready-${process.pid}-${++counter}`;
  const hooks = spec.toolHooks === undefined ? {} : { hooks: initializeHooks(spec.toolHooks) };
  const request = { type: 'control_request', request_id: requestId, request: { subtype: 'initialize', ...hooks } };
  return {
    lines: [`${JSON.stringify(request)}\n`],
    // The cheap substring test runs on every line; JSON is parsed only for a likely match.
    isReady: (line) => line?.includes(requestId) === true && isControlResponse(line, requestId),
  };
}

function isControlResponse(line: string, requestId: string): boolean {
  try {
    const msg: unknown = JSON.parse(line);
    if (typeof msg !== 'object' || msg === null || !('type' in msg) || msg.type !== 'control_response') return false;
    const response = 'response' in msg ? msg.response : undefined;
    return (
      typeof response === 'object' && response !== null && 'request_id' in response && response.request_id === requestId
    );
  } catch {
    return false;
  }
}
