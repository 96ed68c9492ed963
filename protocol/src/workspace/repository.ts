import { z } from 'zod';

// A session may start from a git repository (docs/DESIGN.md "Workspaces"): the runner clones it
// into the empty workspace before the CLI starts, outside the agent's sandbox, and commits the
// result as the workspace's baseline, the starting point `GET /api/sessions/:id/diff` compares to.
// Only which URLs are well-formed is decided here; which hosts may be cloned is a setting.

const MAX_URL_BYTES = 2048;

export const RepositoryUrlSchema = z
  .string()
  .max(MAX_URL_BYTES, `at most ${MAX_URL_BYTES} characters`)
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' });
      return;
    }
    const problem = urlProblem(url, value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

function urlProblem(url: URL, value: string): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  // Credentials in the URL would travel into logs and the clone's config.
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.hash !== '') return 'must not carry a fragment';
  // The host is judged from this parse, and git (libcurl) reads the string itself: the two must
  // not disagree. They do on what the URL standard repairs and libcurl does not, such as
  // `http://allowed.example\@10.0.0.1/`, a backslash here and a user name before `@` there. A URL
  // already in the standard's own form reads the same to both.
  if (url.href !== value) return `must be written as ${url.href}`;
  return undefined;
}

/** A branch, tag or commit; never an option (`-...`) or a revision expression. */
export const RepositoryRefSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'at most 255 characters')
  .regex(/^[A-Za-z0-9_][A-Za-z0-9._/-]*$/, 'must be a branch, tag or commit name')
  .refine((ref) => !ref.includes('..') && !ref.endsWith('/') && !ref.endsWith('.lock'), {
    message: 'must be a branch, tag or commit name',
  });

export const RepositorySchema = z.strictObject({
  url: RepositoryUrlSchema,
  /** Absent: the repository's default branch. */
  ref: RepositoryRefSchema.optional(),
});
export type Repository = z.infer<typeof RepositorySchema>;

/** What a workspace commit carries when it is the clone: the diff's starting point. */
export const WorkspaceBaselineSchema = z.object({
  url: RepositoryUrlSchema,
  ref: RepositoryRefSchema.optional(),
  /** The commit the clone checked out. */
  commit: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, 'must be a full lowercase hex commit id'),
});
export type WorkspaceBaseline = z.infer<typeof WorkspaceBaselineSchema>;
