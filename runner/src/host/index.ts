// `@switchyard/runner/host`: the local runner host (the ECS API stand-in) and the process-tree
// helpers `npm start`, the stack tests and the edge's launcher tests use to start, query and reap it.
export { hostFetch } from './client.ts';
export {
  claimStateDir,
  descendants,
  killGroup,
  listProcs,
  liveInGroups,
  type ProcInfo,
  readProc,
} from './process-tree.ts';
export {
  DEFAULT_TASK_ROLE_ARN,
  type RecordedEcsRequest,
  type RunnerHost,
  type RunnerHostOptions,
  startRunnerHost,
} from './server.ts';
export type { RecordedStsRequest } from './sts.ts';
export { reapStaleTasks } from './stale-tasks.ts';
export type { HostTaskSummary } from './tasks.ts';
