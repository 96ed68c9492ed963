// bench/runner-identity: what the runner's proof of its task identity (docs/DESIGN.md "Runner
// identity") adds to a session's first message. Two local stacks run side by side, one with
// RUNNER_IDENTITY=sts (the default: the runner fetches its task credentials and signs a
// GetCallerIdentity request while it dials; the hub sends that to the runner host's STS stand-in
// before the welcome) and one with RUNNER_IDENTITY=off (the baseline), and the first messages of
// new sessions alternate between them: POST → first text.delta at an SSE client, with no
// provisioning delay so the start path is all there is. The STS here is on loopback; production's
// regional STS adds its own round trip from the edge, which this machine cannot measure.
// Run: npm run bench -- runner-identity   (or node bench/runner-identity/run.ts [--runs N] [--backend claude|pi])
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, type Stack } from '../../scripts/start.ts';
import { Api } from '../../test/helpers/sse-client.ts';
import { median } from '../stats.ts';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : (process.argv[i + 1] ?? fallback);
};
const RUNS = Number(arg('--runs', '9'));
const BACKEND = arg('--backend', 'claude');
const TURN_MS = 180_000;

async function stackWith(dir: string, name: string, identity: 'sts' | 'off'): Promise<{ stack: Stack; api: Api }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.ANTHROPIC_API_KEY;
  delete env.SWITCHYARD_MODEL_URL;
  delete env.SWITCHYARD_ADMIN_PASSWORD;
  const stack = await startStack({
    port: 0,
    frozenEdge: true,
    devDir: join(dir, name, 'dev'),
    persistTo: join(dir, name, 'state'),
    env,
    readyTimeoutMs: 240_000,
    edgeVars: { RUNNER_IDENTITY: identity },
    output: () => undefined,
    log: () => undefined,
  });
  return { stack, api: await Api.login(stack.url, stack.admin.username, stack.admin.password) };
}

/** A new session's first message: ms from POST to its first text.delta; waits for the turn's end. */
async function coldFirst(api: Api): Promise<number> {
  const s = await api.call<{ id: string; backend: string }>('POST', '/api/sessions', { title: 'bench identity' });
  if (s.status !== 201) throw new Error(`new session: ${s.status} ${s.text}`);
  if (s.body.backend !== BACKEND) throw new Error(`session backend ${s.body.backend}, wanted ${BACKEND}`);
  const sse = await api.events(s.body.id);
  const t0 = performance.now();
  const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${s.body.id}/messages`, { text: 'hello' });
  if (r.status !== 202) throw new Error(`message: ${r.status} ${r.text}`);
  const mid = r.body.messageId;
  const first = await sse.waitFor('first delta', (e) => e.event === 'text.delta' && e.data.messageId === mid, TURN_MS);
  await sse.turnDone(mid, TURN_MS);
  await sse.close();
  // Its runner stops with the session, so the next sample does not share the machine with it.
  await api.call('DELETE', `/api/sessions/${s.body.id}`);
  return first.receivedAt - t0;
}

const dir = mkdtempSync(join(tmpdir(), 'bench-identity-'));
let on: { stack: Stack; api: Api } | undefined;
let off: { stack: Stack; api: Api } | undefined;
try {
  on = await stackWith(dir, 'on', 'sts');
  off = await stackWith(dir, 'off', 'off');
  if (BACKEND !== 'claude') {
    for (const s of [on, off]) {
      const r = await s.api.call('PUT', '/api/admin/settings', { llmBackend: BACKEND });
      if (r.status !== 200) throw new Error(`switching to ${BACKEND}: ${r.status} ${r.text}`);
    }
  }
  // One of each first, untimed: compile caches and the edge's first requests.
  await coldFirst(on.api);
  await coldFirst(off.api);
  const times = { on: [] as number[], off: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    // Alternating which goes first, so drift over the run falls on both alike.
    const order = i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    for (const k of order) times[k].push(await coldFirst((k === 'on' ? on : off).api));
  }
  const mOn = median(times.on);
  const mOff = median(times.off);
  console.log(`${BACKEND}, ${RUNS} interleaved rounds, ${new Date().toISOString()}`);
  console.log(`first message of a new session, POST → first text.delta (median ms):`);
  console.log(`  identity off (baseline): ${mOff.toFixed(0)}   [${times.off.map((t) => t.toFixed(0)).join(', ')}]`);
  console.log(`  identity on:             ${mOn.toFixed(0)}   [${times.on.map((t) => t.toFixed(0)).join(', ')}]`);
  console.log(`  ratio on/off: ${(mOn / mOff).toFixed(3)}×, difference ${(mOn - mOff).toFixed(0)} ms`);
} finally {
  await on?.stack.stop();
  await off?.stack.stop();
  rmSync(dir, { recursive: true, force: true });
}
