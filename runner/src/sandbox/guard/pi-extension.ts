// pi's guard extension, loaded with `--no-extensions -e <this file>` (pi loads
// it through jiti, which imports it natively). The same rules the runner
// answers claude's hooks with (rules.ts).
//
// Fail closed: a policy that is missing or invalid throws here, at load, and
// pi 0.73 exits 1 with `Failed to load extension "<this file>": ...` before it
// reads any command; a file that cannot be compiled or imported does the same.
// A handler that throws blocks the tool (pi: "tool_call errors block the tool"),
// and decide() itself denies instead of throwing.
//
// Approval mode `ask` (the spawn sets SWITCHYARD_APPROVALS=ask): after the guard
// allows a call, a person decides through pi's extension UI — `ctx.ui.confirm`
// (rpc: extension_ui_request → extension_ui_response), and on a deny `ctx.ui.input`
// fetches the deny's message for the model. The titles are the contract with the
// pi codec (protocol/src/pi/approval.ts; a test keeps both in step).
import { decide } from './rules.ts';
import { parsePolicy, POLICY_ENV } from './policy.ts';
import { nodeFs } from './resolve.ts';

interface ToolCallEvent {
  toolCallId?: string;
  toolName: string;
  input: unknown;
}
interface DialogOptions {
  signal?: AbortSignal;
}
interface ExtensionContext {
  cwd?: string;
  /** Aborted by an interrupt: a pending question then resolves as a refusal. */
  signal?: AbortSignal | undefined;
  ui?: {
    confirm(title: string, message: string, opts?: DialogOptions): Promise<boolean>;
    input(title: string, placeholder?: string, opts?: DialogOptions): Promise<string | undefined>;
  };
}
type Verdict = { block: true; reason: string } | undefined;
interface PiExtensionApi {
  on(event: 'tool_call', handler: (event: ToolCallEvent, ctx: ExtensionContext) => Verdict | Promise<Verdict>): void;
}

export const APPROVAL_ENV = 'SWITCHYARD_APPROVALS';
export const APPROVAL_CONFIRM_TITLE = 'switchyard:approval';
export const APPROVAL_DENY_REASON_TITLE = 'switchyard:deny-reason';
const DEFAULT_DENY = 'A person denied this tool call.';

/** Asks a person (through the runner and the hub); anything but a clear yes is a refusal. */
async function askPerson(event: ToolCallEvent, ctx: ExtensionContext): Promise<Verdict> {
  const ui = ctx.ui;
  if (ui === undefined) return { block: true, reason: 'switchyard: no one can be asked in this mode; refusing' };
  const toolCallId = event.toolCallId ?? '';
  const opts = ctx.signal !== undefined ? { signal: ctx.signal } : undefined;
  const question = JSON.stringify({ toolCallId, toolName: event.toolName, input: event.input ?? {} });
  if ((await ui.confirm(APPROVAL_CONFIRM_TITLE, question, opts)) === true) return undefined;
  const reason = ctx.signal?.aborted ? undefined : await ui.input(APPROVAL_DENY_REASON_TITLE, toolCallId, opts);
  return { block: true, reason: typeof reason === 'string' && reason.trim() !== '' ? reason : DEFAULT_DENY };
}

export default function switchyardGuard(pi: PiExtensionApi): void {
  const parsed = parsePolicy(process.env[POLICY_ENV]);
  if (!parsed.ok) throw new Error(`switchyard guard: ${parsed.reason}`);
  const policy = parsed.policy;
  const fs = nodeFs();
  const ask = process.env[APPROVAL_ENV] === 'ask';
  pi.on('tool_call', (event, ctx) => {
    const decision = decide({ tool: event.toolName, input: event.input, cwd: ctx?.cwd }, policy, fs);
    // The guard first: what it refuses is never put to a person.
    if (!decision.allow) return { block: true, reason: decision.reason };
    return ask ? askPerson(event, ctx ?? {}) : undefined;
  });
}
