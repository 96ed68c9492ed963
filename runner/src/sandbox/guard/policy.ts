// The per-session policy the guard enforces. For claude it stays in the
// runner, which answers claude's hooks. For pi the runner puts it, as JSON, in
// pi's environment (SWITCHYARD_GUARD_POLICY), which the extension reads once at
// load. Nothing the agent runs can change the environment of the process that
// hosts the extension, so the policy needs no file that would have to be
// protected from the agent.

export const POLICY_ENV = 'SWITCHYARD_GUARD_POLICY';
export const POLICY_VERSION = 1;

export interface GuardPolicy {
  v: typeof POLICY_VERSION;
  backend: 'claude' | 'pi';
  /** Absolute path of the session workspace; every path argument must resolve inside it. */
  workspace: string;
  /** The session's tool allow-list, in the backend's own names. */
  tools: string[];
}

export type PolicyResult = { ok: true; policy: GuardPolicy } | { ok: false; reason: string };

export function parsePolicy(text: string | undefined): PolicyResult {
  if (text === undefined || text === '') return { ok: false, reason: `no policy: ${POLICY_ENV} is not set` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, reason: `${POLICY_ENV} is not JSON` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, reason: `${POLICY_ENV} is not an object` };
  const r = raw as Record<string, unknown>;
  if (r.v !== POLICY_VERSION) return { ok: false, reason: `${POLICY_ENV}: unsupported version ${JSON.stringify(r.v)}` };
  if (r.backend !== 'claude' && r.backend !== 'pi')
    return { ok: false, reason: `${POLICY_ENV}: backend must be claude or pi` };
  if (typeof r.workspace !== 'string' || !r.workspace.startsWith('/') || r.workspace.includes('\0'))
    return { ok: false, reason: `${POLICY_ENV}: workspace must be an absolute path` };
  if (!Array.isArray(r.tools) || !r.tools.every((t): t is string => typeof t === 'string' && t.length > 0))
    return { ok: false, reason: `${POLICY_ENV}: tools must be a list of tool names` };
  return { ok: true, policy: { v: POLICY_VERSION, backend: r.backend, workspace: r.workspace, tools: [...r.tools] } };
}

export function policyEnv(policy: GuardPolicy): Record<string, string> {
  return { [POLICY_ENV]: JSON.stringify(policy) };
}
