import type { ApprovalMode, Backend } from '@switchyard/protocol';

// What becomes of a CLI started before the session's welcome (a pooled runner's, or a fresh
// session's) once the welcome says what to restore (docs/DESIGN.md "Runner behaviour (serve)").
// Pure, so the rule is unit-tested apart from the processes it decides about.

/** `reload`: the CLI takes it on where it runs (cli/reload.ts); `replace`: a new CLI starts after it. */
export type WelcomeRestore = 'reload' | 'replace';

/** What the runner logs when the rule takes the early CLI (tests and the pool's e2e wait for it). */
export const WELCOME_RESTORE_LOG: Record<WelcomeRestore, string> = {
  reload: 'reloading the CLI started before the welcome',
  replace: 'replacing the CLI started before the welcome',
};

export interface WelcomeBrings {
  transcript: boolean;
  /** The durable workspace holds files (its generation is not 0): they are pulled before any message. */
  files: boolean;
  repository: boolean;
  approvals: ApprovalMode;
}

/**
 * Undefined when the welcome brings nothing, and the early CLI serves as it is. Otherwise: a
 * transcript to resume, files its start did not see (claude's start looks at the workspace, pi
 * reads its `.pi/`), a repository to clone, approval mode `ask` (a spawn-time setting of
 * the guard for both CLIs). pi builds its runtime again on a session switch, so it reloads onto
 * the first three; claude's conversation and start are fixed, so it is replaced, as is a pi that
 * must ask.
 */
export function welcomeRestore(backend: Backend, brings: WelcomeBrings): WelcomeRestore | undefined {
  if (!brings.transcript && !brings.files && !brings.repository && brings.approvals === 'auto') return undefined;
  return backend === 'pi' && brings.approvals === 'auto' ? 'reload' : 'replace';
}
