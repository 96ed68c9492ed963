// pi's guard extension, loaded with `--no-extensions -e <this file>` (pi
// compiles it with jiti). The same rules as claude's hook (rules.ts).
//
// Fail closed: a policy that is missing or invalid throws here, at load, and
// pi 0.73 exits 1 with `Failed to load extension "<this file>": ...` before it
// reads any command; a file that cannot be compiled or imported does the same.
// A handler that throws blocks the tool (pi: "tool_call errors block the tool"),
// and decide() itself denies instead of throwing.
import { decide } from './rules.ts';
import { parsePolicy, POLICY_ENV } from './policy.ts';
import { nodeFs } from './resolve.ts';

interface ToolCallEvent {
  toolName: string;
  input: unknown;
}
interface ExtensionContext {
  cwd?: string;
}
interface PiExtensionApi {
  on(
    event: 'tool_call',
    handler: (event: ToolCallEvent, ctx: ExtensionContext) => { block: true; reason: string } | undefined,
  ): void;
}

export default function switchyardGuard(pi: PiExtensionApi): void {
  const parsed = parsePolicy(process.env[POLICY_ENV]);
  if (!parsed.ok) throw new Error(`switchyard guard: ${parsed.reason}`);
  const policy = parsed.policy;
  const fs = nodeFs();
  pi.on('tool_call', (event, ctx) => {
    const decision = decide({ tool: event.toolName, input: event.input, cwd: ctx?.cwd }, policy, fs);
    return decision.allow ? undefined : { block: true, reason: decision.reason };
  });
}
