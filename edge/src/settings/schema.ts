import { z } from '@hono/zod-openapi';
import {
  APPROVAL_TIMEOUT_BOUNDS,
  ApprovalModeSchema,
  ApprovalPolicySchema,
  BackendSchema,
  DEFAULT_APPROVAL_POLICY,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  RepositoryHostsSchema,
  type Backend,
} from '@switchyard/protocol';
import { DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from '@switchyard/protocol';
import { echo } from '../validation.ts';

/**
 * `BackendSchema` with an error that names the accepted values and echoes what was sent. The
 * values come from the protocol package, so a new backend shows up here without an edit.
 */
const LlmBackendInputSchema = z.enum(BackendSchema.options, {
  error: (iss) => `must be one of ${BackendSchema.options.join(', ')} (got ${echo(iss.input)})`,
}) satisfies z.ZodType<Backend>;

const ModelNameSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, 'letters, digits and . _ : / @ - only');

const SETTINGS_BOUNDS = {
  sessionIdleMinutes: { min: 1, max: 24 * 60 },
  unusedRunnerIdleMinutes: { min: 1, max: 24 * 60 },
  sessionMaxMinutes: { min: 5, max: 7 * 24 * 60 },
  maxMessageBytes: { min: 1024, max: 10 * 1024 * 1024 },
  maxLiveRunnersPerUser: { min: 1, max: 1000 },
  maxLiveRunners: { min: 1, max: 100_000 },
  workspaceMaxFileBytes: { min: 1024, max: 1024 * 1024 * 1024 },
  workspaceMaxBytes: { min: 1024, max: 64 * 1024 * 1024 * 1024 },
  workspaceMaxFiles: { min: 1, max: 100_000 },
  approvalTimeoutSeconds: APPROVAL_TIMEOUT_BOUNDS,
} as const;

/** A whole number within `b`; a refusal names the bounds, so a script's author need not look them up. */
const int = (b: { min: number; max: number }) => {
  const message = `must be a whole number from ${b.min} to ${b.max}`;
  return z.number({ error: message }).int(message).min(b.min, message).max(b.max, message);
};

const DefaultModelSchema = z
  .object({
    claude: ModelNameSchema.nullable(),
    pi: ModelNameSchema.nullable(),
  })
  .openapi({ description: 'model per backend for new sessions; null means the CLI’s own default' });

const SettingsObject = z.object({
  llmBackend: BackendSchema.openapi({ description: 'backend for new sessions; existing sessions keep theirs' }),
  defaultModel: DefaultModelSchema,
  sessionIdleMinutes: int(SETTINGS_BOUNDS.sessionIdleMinutes).openapi({
    description: 'a session with no activity for this long is stopped',
  }),
  unusedRunnerIdleMinutes: int(SETTINGS_BOUNDS.unusedRunnerIdleMinutes).openapi({
    description:
      'a runner that has answered no message yet (started ahead of the first one, e.g. while a person types) is stopped after this long without one; the lower of this and sessionIdleMinutes applies',
  }),
  sessionMaxMinutes: int(SETTINGS_BOUNDS.sessionMaxMinutes).openapi({
    description: 'a session is stopped after this long regardless of activity',
  }),
  maxMessageBytes: int(SETTINGS_BOUNDS.maxMessageBytes).openapi({
    description: 'largest accepted user message body (text plus images)',
  }),
  maxLiveRunnersPerUser: int(SETTINGS_BOUNDS.maxLiveRunnersPerUser).openapi({
    description: 'runners one user may have at once; a message that would start one more is 429 runner_limit',
  }),
  maxLiveRunners: int(SETTINGS_BOUNDS.maxLiveRunners).openapi({
    description: 'runners all users together may have at once',
  }),
  workspaceMaxFileBytes: int(SETTINGS_BOUNDS.workspaceMaxFileBytes).openapi({
    description: 'largest file a session workspace may hold (uploads and what the agent writes)',
  }),
  workspaceMaxBytes: int(SETTINGS_BOUNDS.workspaceMaxBytes).openapi({
    description: 'bytes of all files in one session workspace together',
  }),
  workspaceMaxFiles: int(SETTINGS_BOUNDS.workspaceMaxFiles).openapi({
    description: 'files one session workspace may hold',
  }),
  defaultApprovals: ApprovalModeSchema.openapi({
    description:
      'approval mode of new sessions that do not choose one: `auto` runs every tool the guard allows, `ask` waits for a person',
  }),
  approvalPolicy: ApprovalPolicySchema.openapi({
    description: 'tool kinds (read, write, shell, web, other) decided without a person in `ask` sessions',
  }),
  approvalTimeoutSeconds: int(SETTINGS_BOUNDS.approvalTimeoutSeconds).openapi({
    description: 'a pending approval nobody answers is denied (reason `expired`) after this long',
  }),
  repositoryHosts: RepositoryHostsSchema.openapi({
    description:
      'hosts a session may clone its repository from: `*` any public host, `*.example.org` its subdomains, or a host name; empty: none. Loopback, private and link-local addresses are refused whatever this says',
  }),
});

function checkLimits(
  s: { sessionIdleMinutes: number; sessionMaxMinutes: number; maxLiveRunnersPerUser: number; maxLiveRunners: number },
  ctx: z.RefinementCtx,
) {
  if (s.sessionMaxMinutes < s.sessionIdleMinutes) {
    ctx.addIssue({
      code: 'custom',
      path: ['sessionMaxMinutes'],
      message: `must be at least sessionIdleMinutes (${s.sessionIdleMinutes})`,
    });
  }
  if (s.maxLiveRunnersPerUser > s.maxLiveRunners) {
    ctx.addIssue({
      code: 'custom',
      path: ['maxLiveRunnersPerUser'],
      message: `must be at most maxLiveRunners (${s.maxLiveRunners})`,
    });
  }
}

export const SettingsSchema = SettingsObject.superRefine(checkLimits).openapi('Settings');
export type Settings = z.infer<typeof SettingsSchema>;

export const DEFAULT_SETTINGS: Settings = {
  llmBackend: 'claude',
  defaultModel: { claude: null, pi: null },
  sessionIdleMinutes: 15,
  unusedRunnerIdleMinutes: 5,
  sessionMaxMinutes: 8 * 60,
  maxMessageBytes: 1024 * 1024,
  maxLiveRunnersPerUser: 5,
  maxLiveRunners: 50,
  workspaceMaxFileBytes: DEFAULT_WORKSPACE_LIMITS.maxFileBytes,
  workspaceMaxBytes: DEFAULT_WORKSPACE_LIMITS.maxWorkspaceBytes,
  workspaceMaxFiles: DEFAULT_WORKSPACE_LIMITS.maxWorkspaceFiles,
  defaultApprovals: 'auto',
  approvalPolicy: DEFAULT_APPROVAL_POLICY,
  approvalTimeoutSeconds: DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  repositoryHosts: ['*'],
};

/** A partial update: some or all fields, `defaultModel` merged per backend. Unknown keys are refused. */
export const SettingsPatchSchema = z
  .strictObject({
    llmBackend: LlmBackendInputSchema.optional(),
    defaultModel: z
      .strictObject({ claude: ModelNameSchema.nullable().optional(), pi: ModelNameSchema.nullable().optional() })
      .optional(),
    sessionIdleMinutes: SettingsObject.shape.sessionIdleMinutes.optional(),
    unusedRunnerIdleMinutes: SettingsObject.shape.unusedRunnerIdleMinutes.optional(),
    sessionMaxMinutes: SettingsObject.shape.sessionMaxMinutes.optional(),
    maxMessageBytes: SettingsObject.shape.maxMessageBytes.optional(),
    maxLiveRunnersPerUser: SettingsObject.shape.maxLiveRunnersPerUser.optional(),
    maxLiveRunners: SettingsObject.shape.maxLiveRunners.optional(),
    workspaceMaxFileBytes: SettingsObject.shape.workspaceMaxFileBytes.optional(),
    workspaceMaxBytes: SettingsObject.shape.workspaceMaxBytes.optional(),
    workspaceMaxFiles: SettingsObject.shape.workspaceMaxFiles.optional(),
    defaultApprovals: SettingsObject.shape.defaultApprovals.optional(),
    approvalPolicy: SettingsObject.shape.approvalPolicy.optional(),
    approvalTimeoutSeconds: SettingsObject.shape.approvalTimeoutSeconds.optional(),
    repositoryHosts: SettingsObject.shape.repositoryHosts.optional(),
  })
  .refine((p) => Object.keys(p).length > 0, { message: 'give at least one setting to change' })
  .openapi('SettingsPatch');
export type SettingsPatch = z.infer<typeof SettingsPatchSchema>;

export function applyPatch(current: Settings, patch: SettingsPatch): Settings {
  const model = { ...current.defaultModel };
  if (patch.defaultModel?.claude !== undefined) model.claude = patch.defaultModel.claude;
  if (patch.defaultModel?.pi !== undefined) model.pi = patch.defaultModel.pi;
  return {
    llmBackend: patch.llmBackend ?? current.llmBackend,
    defaultModel: model,
    sessionIdleMinutes: patch.sessionIdleMinutes ?? current.sessionIdleMinutes,
    unusedRunnerIdleMinutes: patch.unusedRunnerIdleMinutes ?? current.unusedRunnerIdleMinutes,
    sessionMaxMinutes: patch.sessionMaxMinutes ?? current.sessionMaxMinutes,
    maxMessageBytes: patch.maxMessageBytes ?? current.maxMessageBytes,
    maxLiveRunnersPerUser: patch.maxLiveRunnersPerUser ?? current.maxLiveRunnersPerUser,
    maxLiveRunners: patch.maxLiveRunners ?? current.maxLiveRunners,
    workspaceMaxFileBytes: patch.workspaceMaxFileBytes ?? current.workspaceMaxFileBytes,
    workspaceMaxBytes: patch.workspaceMaxBytes ?? current.workspaceMaxBytes,
    workspaceMaxFiles: patch.workspaceMaxFiles ?? current.workspaceMaxFiles,
    defaultApprovals: patch.defaultApprovals ?? current.defaultApprovals,
    approvalPolicy: patch.approvalPolicy ?? current.approvalPolicy,
    approvalTimeoutSeconds: patch.approvalTimeoutSeconds ?? current.approvalTimeoutSeconds,
    repositoryHosts: patch.repositoryHosts ?? current.repositoryHosts,
  };
}

/** Changed top-level fields, old and new values: what the audit trail records. */
export function diffSettings(a: Settings, b: Settings): { before: Partial<Settings>; after: Partial<Settings> } {
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  for (const key of Object.keys(b) as Array<keyof Settings>) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) {
      before[key] = a[key];
      after[key] = b[key];
    }
  }
  return { before: before as Partial<Settings>, after: after as Partial<Settings> };
}

/**
 * Reads the stored JSON leniently: fields missing (added by a later release) or invalid (hand
 * edited) fall back to their defaults one by one instead of failing every request.
 */
export function settingsFromStored(stored: unknown): Settings {
  const obj = typeof stored === 'object' && stored !== null ? (stored as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof Settings>) {
    const parsed = SettingsObject.shape[key].safeParse(obj[key]);
    out[key] = parsed.success ? parsed.data : DEFAULT_SETTINGS[key];
  }
  const merged = out as Settings;
  return SettingsSchema.safeParse(merged).success
    ? merged
    : {
        ...merged,
        sessionMaxMinutes: Math.max(merged.sessionMaxMinutes, merged.sessionIdleMinutes),
        maxLiveRunnersPerUser: Math.min(merged.maxLiveRunnersPerUser, merged.maxLiveRunners),
      };
}

/** The workspace limits these settings set, in the shape the protocol checks. */
export function workspaceLimitsOf(s: Settings): WorkspaceLimits {
  return {
    maxFileBytes: s.workspaceMaxFileBytes,
    maxWorkspaceBytes: s.workspaceMaxBytes,
    maxWorkspaceFiles: s.workspaceMaxFiles,
  };
}
