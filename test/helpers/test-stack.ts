// The whole local stack for a cross-package test file, the way `npm start` runs it, in throwaway
// directories, on the offline model whatever the environment says, with service output kept in
// memory (dumped by a failing test) instead of printed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, type Stack, type StackOptions } from '../../scripts/start.ts';

export const STACK_READY_MS = 240_000;

export interface TestStack {
  stack: Stack;
  /** The last few thousand lines the services printed. */
  log: string[];
  /** Stops every service and removes the directories. */
  stop(): Promise<void>;
}

export async function startTestStack(name: string, opts: Partial<StackOptions> = {}): Promise<TestStack> {
  const dir = mkdtempSync(join(tmpdir(), `switchyard-${name}-`));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.ANTHROPIC_API_KEY;
  delete env.SWITCHYARD_MODEL_URL;
  delete env.SWITCHYARD_ADMIN_PASSWORD;
  const log: string[] = [];
  const keep = (line: string) => {
    log.push(line);
    if (log.length > 4000) log.splice(0, 1000);
  };
  let stack: Stack;
  try {
    stack = await startStack({
      port: 0,
      frozenEdge: true,
      devDir: join(dir, 'dev'),
      persistTo: join(dir, 'state'),
      env,
      readyTimeoutMs: STACK_READY_MS,
      output: (service, _stream, line) => keep(`[${service}] ${line}`),
      log: keep,
      ...opts,
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    stack,
    log,
    stop: async () => {
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
