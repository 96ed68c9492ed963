import { z } from 'zod';
import type { Backend } from './backend.ts';
import type { AgentEvent } from './events.ts';
import { IMAGE_MEDIA_TYPES, MAX_IMAGES_PER_MESSAGE } from './limits.ts';

export const ImageSchema = z.object({
  mediaType: z.enum(IMAGE_MEDIA_TYPES),
  /** base64, no data: prefix */
  data: z
    .string()
    .min(1)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
});
export type Image = z.infer<typeof ImageSchema>;

export const UserMessageSchema = z.object({
  text: z.string(),
  images: z.array(ImageSchema).max(MAX_IMAGES_PER_MESSAGE).optional(),
});
export type UserMessage = z.infer<typeof UserMessageSchema>;

export const SpawnOptionsSchema = z.object({
  /** How to start the CLI: the binary, plus leading args (e.g. node + cli.js). */
  executable: z.object({ command: z.string().min(1), prefixArgs: z.array(z.string()).default([]) }),
  /** Session workspace, the CLI's cwd. */
  workspace: z.string().min(1),
  /** Private HOME for the CLI. */
  home: z.string().min(1),
  /** Private CLI config dir (CLAUDE_CONFIG_DIR / PI_CODING_AGENT_DIR). */
  configDir: z.string().min(1),
  /** Anthropic-Messages endpoint the CLI talks to (the runner's proxy or the offline model). */
  modelBaseUrl: z.url(),
  /** Key the CLI presents to modelBaseUrl; a dummy when a proxy injects the real one. */
  modelApiKey: z.string().min(1),
  model: z.string().min(1).optional(),
  /** claude: session id; pi: session file path. */
  resume: z.string().min(1).optional(),
  /** No session persistence: a single prompt, then the runner closes stdin. */
  oneShot: z.boolean().default(false),
  appendSystemPrompt: z.string().optional(),
  /** Backend-specific tool names; absent means the adapter's default set. */
  allowedTools: z.array(z.string().min(1)).optional(),
  /**
   * The tool-call guard. pi: the absolute path of the guard extension and a module node preloads
   * (`--import`) into pi (the runner's strip cache, so pi loads the guard without Node's TypeScript
   * stripper). claude: `runner`, the runner answers claude's tool-call hooks itself over the
   * control protocol (`SpawnSpec.toolHooks`).
   */
  guard: z
    .union([z.literal('runner'), z.object({ file: z.string().min(1), preload: z.string().min(1).optional() })])
    .optional(),
  /** The runner's environment; only allow-listed names are copied. */
  // Copied first: zod rejects exotic objects such as Node's process.env.
  baseEnv: z
    .preprocess(
      (v) => (typeof v === 'object' && v !== null ? { ...v } : v),
      z.record(z.string(), z.string().optional()),
    )
    .default({}),
  /** `ask`: every tool call the guard allows waits for the runner's approval answer (DESIGN "Tool approvals"). */
  approvals: z.enum(['auto', 'ask']).default('auto'),
  /** Retry policy for provider errors, honoured by both CLIs. */
  retry: z.object({ maxRetries: z.number().int().min(0).max(10), baseDelayMs: z.number().int().min(0) }).optional(),
  /**
   * An absolute directory holding Node's compile cache for a CLI that runs on Node (pi:
   * `NODE_COMPILE_CACHE`), so it does not compile its modules again at every start. It must be
   * read-only to the CLI (compiled code from it runs unchecked beyond its source hash). claude,
   * a native binary, has no use for it and is started without it.
   */
  compileCache: z.string().startsWith('/', { error: 'must be an absolute path' }).optional(),
});
export type SpawnOptions = z.input<typeof SpawnOptionsSchema>;

export interface SpawnSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Files the runner must write before spawning (CLI config). */
  files: Array<{ path: string; content: string; mode?: number }>;
  /**
   * claude with the guard: the hooks its readiness handshake registers, whose calls the codec
   * answers with the check the runner attaches (`AgentCodec.checkToolCalls`).
   */
  toolHooks?: ToolHooks;
}

/** Which of claude's tool calls meet the guard, and whether an allowed one then asks a person. */
export interface ToolHooks {
  /** claude's hook matcher (a regular expression over the tool's name and aliases). */
  matcher: string;
  /** Approval mode ask: a call the guard allows is answered "ask" instead of left to run. */
  ask: boolean;
}

/** A tool call as the guard sees it: the CLI's tool name, its input and the CLI's cwd. */
export interface ToolCall {
  tool: string;
  input: unknown;
  cwd: string | undefined;
}

export type ToolVerdict = { allow: true } | { allow: false; reason: string };

/** Decides one tool call synchronously; a throw is a deny. */
export type ToolCheck = (call: ToolCall) => ToolVerdict;

/** A decided approval as the codec writes it to the CLI. */
export interface ApprovalAnswerLine {
  approvalId: string;
  decision: 'allow' | 'deny';
  /** The deny's text for the model (the runner fills in a default). */
  message?: string | undefined;
}

export interface CliExit {
  code: number | null;
  signal: string | null;
  stderrHead: string;
}

export interface AgentCodec {
  initLines(): string[];
  encodeUserMessage(m: UserMessage): string;
  encodeInterrupt(): string;
  parse(line: string): AgentEvent[];
  /**
   * Lines the codec itself needs written to the CLI's stdin, taken after every
   * parse: it stops a CLI's own retry loop once a provider error is one that
   * retrying cannot fix (claude retries a 401 ten times with backoff).
   */
  takeInput(): string[];
  end(exit: CliExit): AgentEvent[];
  /**
   * The line that answers an `approval.request` this codec emitted, or undefined when the CLI
   * no longer waits for it (answered, cancelled by an interrupt, or never asked).
   */
  encodeApproval(answer: ApprovalAnswerLine): string | undefined;
  /**
   * claude: answer the CLI's tool-call hooks with `check` from now on (`SpawnSpec.toolHooks`).
   * Until then, and in a codec without it, every hook call is refused.
   */
  checkToolCalls?(hooks: ToolHooks, check: ToolCheck): void;
  /** True between an accepted user message and its turn.done. */
  readonly turnOpen: boolean;
  /** The CLI's own session handle for resuming (claude session id, pi session file). */
  readonly resumeHandle: string | undefined;
}

export interface AgentAdapter {
  readonly backend: Backend;
  spawnSpec(opts: SpawnOptions): SpawnSpec;
  createCodec(): AgentCodec;
}
