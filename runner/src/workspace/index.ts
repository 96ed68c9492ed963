// `@switchyard/runner/workspace`: the runner's durable-workspace sync and its HTTP client, for the
// workspace bench (bench/workspace) to drive exactly what a live runner runs.
export { createLogger } from '../log.ts';
export { WorkspaceClient, WorkspaceHttpError, workspaceBaseUrl } from './client.ts';
export { type PullStats, type SaveStats, type WorkspaceStore, WorkspaceSync } from './sync.ts';
