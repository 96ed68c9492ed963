import { z } from 'zod';
import type { Backend } from './backend.ts';

// Tool approvals (DESIGN "Tool approvals"): a session's mode, the tool kinds a policy decides
// by, each backend's tool names mapped to a kind once, and the shapes both sides of the runner
// link and the HTTP API agree on. No Node-only imports: the edge loads this too.

/** `auto`: every tool the guard allows runs; `ask`: a person (or the policy) decides first. */
export const ApprovalModeSchema = z.enum(['auto', 'ask']);
export type ApprovalMode = z.infer<typeof ApprovalModeSchema>;

export const ToolKindSchema = z.enum(['read', 'write', 'shell', 'web', 'other']);
export type ToolKind = z.infer<typeof ToolKindSchema>;

/** The pinned CLIs' tool names; anything not listed is `other`. */
const TOOL_KINDS: Record<Backend, Record<string, ToolKind>> = {
  claude: {
    Read: 'read',
    Glob: 'read',
    Grep: 'read',
    LS: 'read',
    NotebookRead: 'read',
    Write: 'write',
    Edit: 'write',
    MultiEdit: 'write',
    NotebookEdit: 'write',
    Bash: 'shell',
    BashOutput: 'shell',
    KillShell: 'shell',
    WebFetch: 'web',
    WebSearch: 'web',
  },
  pi: {
    read: 'read',
    ls: 'read',
    grep: 'read',
    find: 'read',
    write: 'write',
    edit: 'write',
    bash: 'shell',
  },
};

export function toolKind(backend: Backend, name: string): ToolKind {
  return Object.hasOwn(TOOL_KINDS[backend], name) ? (TOOL_KINDS[backend][name] ?? 'other') : 'other';
}

export const ApprovalPolicySchema = z
  .object({
    /** Kinds that run without asking anyone. */
    autoAllow: z.array(ToolKindSchema).max(5),
    /** Kinds that are refused without asking anyone. */
    autoDeny: z.array(ToolKindSchema).max(5),
  })
  .superRefine((p, ctx) => {
    const both = p.autoAllow.filter((k) => p.autoDeny.includes(k));
    if (both.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['autoDeny'],
        message: `a kind cannot be both auto-allowed and auto-denied: ${both.join(', ')}`,
      });
  });
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = { autoAllow: ['read'], autoDeny: [] };
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 300;
export const APPROVAL_TIMEOUT_BOUNDS = { min: 5, max: 24 * 3600 } as const;

export const ApprovalDecisionSchema = z.enum(['allow', 'deny']);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

export const ApprovalReasonSchema = z.enum(['user', 'policy', 'expired', 'interrupted', 'runner_lost']);
export type ApprovalReason = z.infer<typeof ApprovalReasonSchema>;

/** The policy's verdict for a kind, or undefined when a person must decide. Deny wins a conflict. */
export function policyDecision(policy: ApprovalPolicy, kind: ToolKind): ApprovalDecision | undefined {
  if (policy.autoDeny.includes(kind)) return 'deny';
  if (policy.autoAllow.includes(kind)) return 'allow';
  return undefined;
}

/** Ids come from the CLI (claude's request_id, pi's ui request id) and end up in URLs. */
export const ApprovalIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only');

export const APPROVAL_MESSAGE_MAX = 2000;

/** What a person sends: `POST /api/sessions/:id/approvals/:approvalId`. */
export const ApprovalAnswerSchema = z.strictObject({
  decision: ApprovalDecisionSchema,
  /** For a deny: reaches the model as the tool's error, so it can change course. */
  message: z.string().max(APPROVAL_MESSAGE_MAX).optional(),
});
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

/** The fields of the `approval.request` event (events.ts adds the type). */
export const approvalRequestShape = {
  approvalId: ApprovalIdSchema,
  toolId: z.string(),
  name: z.string(),
  kind: ToolKindSchema,
  input: z.record(z.string(), z.unknown()),
  /** ISO time; the hub sets it from its own clock and `approvalTimeoutSeconds`. */
  expiresAt: z.iso.datetime(),
};

/** The fields of the `approval.resolved` event. */
export const approvalResolvedShape = {
  approvalId: ApprovalIdSchema,
  decision: ApprovalDecisionSchema,
  reason: ApprovalReasonSchema,
  /** Who decided (a username), for `reason: "user"`. */
  by: z.string().optional(),
  /** A deny's message as the model sees it. */
  message: z.string().max(APPROVAL_MESSAGE_MAX).optional(),
};

/** Hub → runner: the answer the CLI is waiting for. Resent after a reconnect until the runner accepts it. */
export const ApprovalDecisionFrameSchema = z.object({
  type: z.literal('approval_decision'),
  approvalId: ApprovalIdSchema,
  decision: ApprovalDecisionSchema,
  message: z.string().max(APPROVAL_MESSAGE_MAX).optional(),
});
export type ApprovalDecisionFrame = z.infer<typeof ApprovalDecisionFrameSchema>;

/** What the CLI is told on a deny without a message. */
export const DEFAULT_DENY_MESSAGE = 'A person denied this tool call.';

/** The message a deny carries to the model for each way it came about. */
export function denyMessage(reason: ApprovalReason, message: string | undefined): string {
  if (message !== undefined && message.trim() !== '') return message;
  switch (reason) {
    case 'policy':
      return 'The session policy refuses this kind of tool call.';
    case 'expired':
      return 'Nobody answered the approval request in time; the tool call was refused.';
    case 'interrupted':
      return 'The turn was interrupted while the tool call waited for approval.';
    case 'runner_lost':
      return 'The session lost its runner while the tool call waited for approval.';
    default:
      return DEFAULT_DENY_MESSAGE;
  }
}
