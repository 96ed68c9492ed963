import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../../../test/helpers/poll.ts';

/** What process-report.mjs writes. */
export interface ProcessReport {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  stripper: boolean;
  undici: boolean;
  /**
   * The first processes it spawned once it changed V8's flags: when (wall-clock ms), and the
   * builtins it first loaded after the flags and before.
   */
  spawns: Array<{ file: string; at: number; builtinsAfterFlags: string[] }>;
}

const PRELOAD = join(import.meta.dirname, 'process-report.mjs');

/** The environment that makes a runner answer `processReport`, its report written to `file`. */
export function reportingEnv(file: string): Record<string, string> {
  return { NODE_OPTIONS: `--import ${PRELOAD}`, SWITCHYARD_PROCESS_REPORT: file };
}

/** Asks the runner `pid` (started with `reportingEnv(file)`) for its report. */
export async function processReport(pid: number, file: string): Promise<ProcessReport> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  return until('the runner process report', () => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as ProcessReport;
    } catch {
      return undefined;
    }
  });
}
