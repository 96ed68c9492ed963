import { z } from 'zod';
import { checkWorkspacePath } from './paths.ts';
import { WorkspaceBaselineSchema } from './repository.ts';

// The durable workspace (docs/DESIGN.md "Workspaces"): file contents are content-addressed blobs
// (sha256), and a manifest maps each path to its blob. The runner and the Files API change the
// manifest by committing upserts and deletes; the hub holds the current one.

export const WorkspacePathSchema = z.string().superRefine((value, ctx) => {
  const checked = checkWorkspacePath(value);
  if (!checked.ok) ctx.addIssue({ code: 'custom', message: checked.message });
});

export const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex sha256');

export const WorkspaceEntrySchema = z.object({
  path: WorkspacePathSchema,
  sha256: Sha256Schema,
  size: z.number().int().nonnegative(),
  /** The owner-execute bit; no other mode bits travel. */
  executable: z.boolean(),
  /** Milliseconds since the epoch, as the writer saw it. */
  modifiedAt: z.number().int().nonnegative(),
});
export type WorkspaceEntry = z.infer<typeof WorkspaceEntrySchema>;

/** Bounds on one workspace; admins set them (settings `workspaceMax*`). */
export const WorkspaceLimitsSchema = z.object({
  maxFileBytes: z.number().int().positive(),
  maxWorkspaceBytes: z.number().int().positive(),
  maxWorkspaceFiles: z.number().int().positive(),
});
export type WorkspaceLimits = z.infer<typeof WorkspaceLimitsSchema>;

export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = {
  maxFileBytes: 32 * 1024 * 1024,
  maxWorkspaceBytes: 512 * 1024 * 1024,
  maxWorkspaceFiles: 10_000,
};

/** The whole durable workspace as of `generation` (0: nothing was ever saved). */
export const WorkspaceManifestSchema = z.object({
  generation: z.number().int().nonnegative(),
  files: z.array(WorkspaceEntrySchema),
  limits: WorkspaceLimitsSchema,
});
export type WorkspaceManifest = z.infer<typeof WorkspaceManifestSchema>;

/** One change to the durable copy; every upserted blob must already be stored. */
export const WorkspaceCommitSchema = z.object({
  upserts: z.array(WorkspaceEntrySchema).max(20_000),
  deletes: z.array(WorkspacePathSchema).max(20_000),
  /** Set on the commit of a session's repository clone: the manifest after it is the diff's baseline. */
  baseline: WorkspaceBaselineSchema.optional(),
});
export type WorkspaceCommit = z.infer<typeof WorkspaceCommitSchema>;

export const WorkspaceCommitResultSchema = z.object({
  generation: z.number().int().nonnegative(),
  files: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});
export type WorkspaceCommitResult = z.infer<typeof WorkspaceCommitResultSchema>;

/**
 * Where a runner reaches the durable workspace over HTTP, with its runner credential as bearer:
 * `GET {base}/manifest`, `GET|PUT {base}/blobs/{sha256}`, `POST {base}/blobs` and
 * `POST {base}/blobs/get` (batches, frames.ts), `POST {base}/commit`.
 */
export const RUNNER_WORKSPACE_PATH = '/internal/runner/workspace';

export type LimitName = keyof WorkspaceLimits;

/** Which limit (if any) a workspace of `files` files and `bytes` bytes is over. */
export function overWorkspaceLimit(
  totals: { files: number; bytes: number },
  limits: WorkspaceLimits,
): { limit: LimitName; value: number } | null {
  if (totals.files > limits.maxWorkspaceFiles) return { limit: 'maxWorkspaceFiles', value: limits.maxWorkspaceFiles };
  if (totals.bytes > limits.maxWorkspaceBytes) return { limit: 'maxWorkspaceBytes', value: limits.maxWorkspaceBytes };
  return null;
}
