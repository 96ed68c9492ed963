// claude's PreToolUse hooks answered by the host over claude's control protocol instead of by a
// command claude starts for every call (verified on 2.1.197, docs/DESIGN.md "The guard"): the
// host registers them in its `initialize` request, claude sends each call that meets them as a
// `hook_callback` control request on stdout, and the host's answer on stdin decides it.
//
// claude treats an error answer as no decision (the call runs): this module never writes one.
// Whatever goes wrong deciding is a deny.
import type { ToolCheck, ToolHooks } from '../adapter.ts';
import { obj, str, type Obj } from '../json-fields.ts';

/** The one callback the host registers; claude names it in every `hook_callback`. */
export const GUARD_CALLBACK_ID = 'switchyard-guard';

/**
 * The tool calls claude asks about: every one, except a shell call in approval mode auto when the
 * shell is on the session's list. The guard does not parse shell (the OS wall bounds it), so for
 * `Bash` it checks the allow-list, which such a call passes by construction, and the `file:` URL
 * rule, which means nothing to a shell that can read any file it sees without one. In mode ask
 * every call meets it (an allow becomes "ask"). claude tests a matcher that is not a plain list of
 * names as a regular expression against the tool's name and its aliases (Bash has none), so a tool
 * it does not know still meets the hook.
 */
export function toolHooksFor(tools: readonly string[], approvals: 'auto' | 'ask'): ToolHooks {
  return {
    matcher: approvals === 'auto' && tools.includes('Bash') ? '^(?!Bash$)' : '.*',
    ask: approvals === 'ask',
  };
}

/** The `hooks` field of claude's `initialize` request that registers the guard. */
export function initializeHooks(hooks: ToolHooks): Record<string, unknown> {
  return { PreToolUse: [{ matcher: hooks.matcher, hookCallbackIds: [GUARD_CALLBACK_ID] }] };
}

/**
 * The answer line to a `hook_callback` request, `{"type":"control_request","request_id",
 * "request":{"subtype":"hook_callback","callback_id","input":{tool_name, tool_input, cwd, …}}}`.
 * Without a check (nothing here registered the hook, or the host forgot to attach one) the call
 * is refused: a hook claude calls is one someone meant to guard with.
 */
export function answerHookCallback(
  requestId: string,
  request: Obj,
  check: { hooks: ToolHooks; check: ToolCheck } | undefined,
): string {
  const deny = (reason: string) => answerLine(requestId, 'deny', reason);
  if (check === undefined) return deny('switchyard guard: no guard is attached to this CLI; refusing the call');
  if (str(request, 'callback_id') !== GUARD_CALLBACK_ID)
    return deny(`switchyard guard: unknown hook callback ${JSON.stringify(request.callback_id)}; refusing the call`);
  const input = obj(request, 'input');
  const tool = input === undefined ? undefined : str(input, 'tool_name');
  if (input === undefined || tool === undefined)
    return deny('switchyard guard: hook input has no tool_name, refusing the call');
  let verdict: ReturnType<ToolCheck>;
  try {
    verdict = check.check({ tool, input: input.tool_input, cwd: str(input, 'cwd') });
  } catch (err) {
    return deny(
      `switchyard guard: internal error, refusing the call (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (!verdict.allow) return deny(verdict.reason);
  // Approval mode ask: the guard allows, a person decides next (claude then sends `can_use_tool`).
  if (check.hooks.ask)
    return answerLine(requestId, 'ask', 'switchyard: this session asks a person before each tool call');
  // No decision: claude's own flow runs the call (the session's tools are pre-approved in auto).
  return `${JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: requestId, response: {} } })}\n`;
}

function answerLine(requestId: string, decision: 'deny' | 'ask', reason: string): string {
  const response = {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: decision, permissionDecisionReason: reason },
  };
  return `${JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: requestId, response } })}\n`;
}
