import type { ApprovalAnswerLine } from '../adapter.ts';
import { ApprovalIdSchema, DEFAULT_APPROVAL_TIMEOUT_SECONDS, toolKind } from '../approvals.ts';
import type { AgentEvent } from '../events.ts';
import { isObj, str, type Obj } from '../json-fields.ts';

// pi's side of tool approvals (DESIGN "Tool approvals"). The runner's guard extension asks
// through pi's extension UI after its own checks: `ctx.ui.confirm(APPROVAL_CONFIRM_TITLE,
// <JSON {toolCallId, toolName, input}>)`, which pi's rpc mode prints as
// `{"type":"extension_ui_request","id","method":"confirm","title","message"}` and resolves
// with `{"type":"extension_ui_response","id","confirmed":bool}`. confirm carries no text, so
// after a deny the extension asks `ctx.ui.input(APPROVAL_DENY_REASON_TITLE, toolCallId)` and
// this codec answers at once with the deny's message. The titles are this file's contract with
// runner/src/sandbox/guard/pi-extension.ts (which may import nothing but Node builtins).

export const PI_APPROVAL_ENV = 'SWITCHYARD_APPROVALS';
export const PI_APPROVAL_CONFIRM_TITLE = 'switchyard:approval';
export const PI_APPROVAL_DENY_REASON_TITLE = 'switchyard:deny-reason';

const DIALOGS = new Set(['select', 'confirm', 'input', 'editor']);

/** The approvals one pi process asks about; one per codec. */
export class PiApprovals {
  /** rpc request id → the tool call it asks about. */
  private readonly asking = new Map<string, string>();
  /** tool call id → the deny message the extension will ask for next. */
  private readonly denied = new Map<string, string>();

  /** One `extension_ui_request`: events to emit, and lines to write back at once. */
  request(msg: Obj): { events: AgentEvent[]; reply?: string } {
    const id = str(msg, 'id');
    const method = str(msg, 'method');
    if (id === undefined || method === undefined || !DIALOGS.has(method)) return { events: [] };
    const title = str(msg, 'title');
    if (method === 'confirm' && title === PI_APPROVAL_CONFIRM_TITLE && ApprovalIdSchema.safeParse(id).success) {
      const q = parseQuestion(str(msg, 'message'));
      if (q !== undefined) {
        this.asking.set(id, q.toolCallId);
        return {
          events: [
            {
              type: 'approval.request',
              approvalId: id,
              toolId: q.toolCallId,
              name: q.toolName,
              kind: toolKind('pi', q.toolName),
              input: q.input,
              // Provisional: the hub replaces it with its own clock and approvalTimeoutSeconds.
              expiresAt: new Date(Date.now() + DEFAULT_APPROVAL_TIMEOUT_SECONDS * 1000).toISOString(),
            },
          ],
        };
      }
    }
    if (method === 'input' && title === PI_APPROVAL_DENY_REASON_TITLE) {
      const toolCallId = str(msg, 'placeholder') ?? '';
      const value = this.denied.get(toolCallId) ?? '';
      this.denied.delete(toolCallId);
      return { events: [], reply: line({ type: 'extension_ui_response', id, value }) };
    }
    // A dialog nobody here can answer (nothing but the guard is loaded): dismissed at once.
    return { events: [], reply: line({ type: 'extension_ui_response', id, cancelled: true }) };
  }

  encode(answer: ApprovalAnswerLine): string | undefined {
    const toolCallId = this.asking.get(answer.approvalId);
    if (toolCallId === undefined) return undefined;
    this.asking.delete(answer.approvalId);
    if (answer.decision === 'deny' && answer.message !== undefined) this.denied.set(toolCallId, answer.message);
    return line({ type: 'extension_ui_response', id: answer.approvalId, confirmed: answer.decision === 'allow' });
  }
}

function parseQuestion(
  text: string | undefined,
): { toolCallId: string; toolName: string; input: Record<string, unknown> } | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObj(v)) return undefined;
  const toolName = str(v, 'toolName');
  if (toolName === undefined) return undefined;
  return { toolCallId: str(v, 'toolCallId') ?? '', toolName, input: isObj(v.input) ? v.input : {} };
}

function line(o: Obj): string {
  return `${JSON.stringify(o)}\n`;
}
