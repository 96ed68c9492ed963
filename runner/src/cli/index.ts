// `@switchyard/runner/cli`: one CLI process and where the pinned CLIs are, for the tests and
// benches outside runner/ that drive a real CLI without the runner around it.
export { CliProcess, type CliProcessHandlers } from './cli-process.ts';
export { type CliExecutable, locateCli } from './locate.ts';
export { type Readiness, readinessFor } from './readiness.ts';
export type { PreparedSpawn } from './spawn.ts';
export { type StartReady, startReady } from './start-ready.ts';
