import { z } from 'zod';
import { approvalRequestShape, approvalResolvedShape } from './approvals.ts';
import { BackendSchema } from './backend.ts';

// The normalized event union: what every adapter emits and what SSE clients
// receive. Field names are the contract in docs/DESIGN.md "Normalized events".

export const ErrorInfoSchema = z.object({
  code: z.string().min(1),
  message: z.string(),
  retryable: z.boolean(),
});
export type ErrorInfo = z.infer<typeof ErrorInfoSchema>;

const UsageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative().optional(),
  cacheWriteTokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

export const StopReasonSchema = z.enum(['end_turn', 'max_tokens', 'interrupted', 'error', 'refusal', 'unknown']);
export type StopReason = z.infer<typeof StopReasonSchema>;

export const SessionStateSchema = z.enum(['starting', 'ready', 'busy', 'idle', 'stopping', 'stopped', 'failed']);
export type SessionState = z.infer<typeof SessionStateSchema>;

export const ContentBlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('thinking'), text: z.string() }),
  z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) }),
]);
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

const index = z.number().int().nonnegative();

export const AgentEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('session.init'),
    backend: BackendSchema,
    cliSessionId: z.string().optional(),
    model: z.string().optional(),
    tools: z.array(z.string()).optional(),
  }),
  z.object({ type: z.literal('text.delta'), index, text: z.string() }),
  z.object({ type: z.literal('thinking.delta'), index, text: z.string() }),
  z.object({ type: z.literal('tool.start'), index, toolId: z.string(), name: z.string() }),
  z.object({ type: z.literal('tool.input'), index, toolId: z.string(), delta: z.string() }),
  z.object({
    type: z.literal('tool.end'),
    index,
    toolId: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
  z.object({ type: z.literal('tool.result'), toolId: z.string(), isError: z.boolean(), output: z.string() }),
  z.object({ type: z.literal('message.assistant'), content: z.array(ContentBlockSchema) }),
  z.object({
    type: z.literal('turn.retry'),
    attempt: z.number().int().nonnegative(),
    maxAttempts: z.number().int().nonnegative().optional(),
    delayMs: z.number().nonnegative().optional(),
    reason: z.string(),
  }),
  z.object({
    type: z.literal('turn.done'),
    stopReason: StopReasonSchema,
    usage: UsageSchema.optional(),
    costUsd: z.number().nonnegative().optional(),
    durationMs: z.number().nonnegative().optional(),
    error: ErrorInfoSchema.optional(),
  }),
  z.object({ type: z.literal('error'), ...ErrorInfoSchema.shape }),
  z.object({ type: z.literal('session.status'), state: SessionStateSchema, reason: z.string().optional() }),
  z.object({ type: z.literal('message.user'), messageId: z.string(), text: z.string() }),
  z.object({ type: z.literal('approval.request'), ...approvalRequestShape }),
  z.object({ type: z.literal('approval.resolved'), ...approvalResolvedShape }),
  /** The durable workspace now holds `files` files, `bytes` in all; everything before this is saved. */
  z.object({
    type: z.literal('workspace.saved'),
    files: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
  }),
]);
export type AgentEvent = z.infer<typeof AgentEventSchema>;
type AgentEventType = AgentEvent['type'];
export type EventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>;

/**
 * Who has a session open right now (not logged, not replayed): one entry per person with the
 * number of streams (tabs, scripts) they hold. Sent over SSE as `event: presence` without an
 * id whenever a viewer joins or leaves.
 */
const PresenceSchema = z.object({
  viewers: z.array(z.object({ name: z.string(), streams: z.number().int().positive() })),
});
export type Presence = z.infer<typeof PresenceSchema>;

/** Tool output is capped so one huge `cat` cannot bloat the event log. */
const TOOL_OUTPUT_CAP = 16 * 1024;

export function capOutput(text: string, cap = TOOL_OUTPUT_CAP): string {
  if (text.length <= cap) return text;
  return `${text.slice(0, cap)}\n…[truncated ${text.length - cap} chars]`;
}
