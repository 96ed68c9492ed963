// The durable workspace through the real edge for bench/workspace: `npm start`'s stack in
// throwaway directories; each store is a fresh session whose runner is live (the hub only takes
// workspace calls from the current runner), reached with a credential for that runner minted
// with the stack's own RUNNER_TOKEN_SECRET, exactly what the runner's welcome would carry.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_WORKSPACE_PATH } from '@switchyard/protocol';
import { mintRunnerToken } from '../../edge/src/runner-link/token.ts';
import { WorkspaceClient, type WorkspaceStore } from '@switchyard/runner/workspace';
import { Api, until } from '../../test/helpers/sse-client.ts';
import { startTestStack } from '../../test/helpers/test-stack.ts';

export async function edgeStores(): Promise<{ next: () => Promise<WorkspaceStore>; stop: () => Promise<void> }> {
  const running = await startTestStack('bench-workspace');
  const { stack } = running;
  const admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  const env = readFileSync(join(stack.devDir, 'edge.env'), 'utf8');
  const secret = /^RUNNER_TOKEN_SECRET=(.*)$/m.exec(env)?.[1] ?? '';
  const next = async (): Promise<WorkspaceStore> => {
    const s = await admin.call<{ id: string }>('POST', '/api/sessions', {});
    const sent = await admin.call('POST', `/api/sessions/${s.body.id}/messages`, { text: 'hello' });
    if (sent.status !== 202) throw new Error(`message: ${sent.status} ${sent.text}`);
    const runner = await until(
      'a connected runner',
      async () => {
        const r = await admin.call<{
          runner: { launchId: string; runnerId: string | null; connected: boolean } | null;
        }>('GET', `/api/sessions/${s.body.id}`);
        const l = r.body.runner;
        return l?.connected && l.runnerId !== null ? { launchId: l.launchId, runnerId: l.runnerId } : undefined;
      },
      120_000,
    );
    const token = await mintRunnerToken(secret, {
      sessionId: s.body.id,
      launchId: runner.launchId,
      expiresAt: Date.now() + 30 * 60_000,
      kind: 'credential',
      runnerId: runner.runnerId,
    });
    const client = new WorkspaceClient(`${stack.url}${RUNNER_WORKSPACE_PATH}`, () => token);
    // The live runner saves once its turn is done; measured after that, so its commit (and its
    // pull of the bench's files that would follow) never lands in the middle of a measurement.
    await until('the runner’s save after its turn', async () => (await client.manifest()).generation >= 1, 120_000);
    return client;
  };
  return { next, stop: () => running.stop() };
}
