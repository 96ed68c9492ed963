// bench/runner/call-notice: how far ahead of each model call the runner's notice comes. The runner
// tells the credential proxy a call is coming after a message, after the answer to the last
// approval and after the last tool's result (`model_call_coming`), and the proxy opens the call's
// upstream connection meanwhile; what that can hide of a new connection's TCP and TLS is the time
// from the notice to the call reaching the proxy. Here a runner in this process (sandbox `none`,
// approvals `ask`) serves the real CLI against the offline model through a stamping forwarder; per
// turn the CLI calls a shell tool (`true`), the bench allows it, and the CLI answers. Printed:
// medians, ms from each notice to the main call it announced arriving at the forwarder (claude's
// side calls, without tools, are left out).
// Run: node bench/runner/call-notice.ts [--turns 9] [--backends claude,pi]
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BackendSchema, type Backend } from '@switchyard/protocol';
import { startOfflineModel } from '@switchyard/offline-model';
import { scripted, waitTurnDone } from '../../runner/test/contract/fixture.ts';
import { startInProcessRunner } from '../../runner/test/contract/in-process-runner.ts';
import { startModelForwarder } from '../../runner/test/contract/model-forwarder.ts';
import { TestHub } from '../../runner/test/contract/test-hub.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '9' }, backends: { type: 'string', default: 'claude,pi' } },
});
const turns = Number(values.turns);
const backends = (values.backends ?? '').split(',').map((b) => BackendSchema.safeParse(b));
if (!Number.isInteger(turns) || turns < 1 || backends.some((b) => !b.success)) {
  console.error('usage: node bench/runner/call-notice.ts [--turns N] [--backends claude,pi]');
  process.exit(2);
}

/** A main call offers tools; claude's side calls (titles and the like) offer none. */
function offersTools(body: string): boolean {
  try {
    const tools: unknown = (JSON.parse(body) as { tools?: unknown }).tools;
    return Array.isArray(tools) && tools.length > 0;
  } catch {
    return false;
  }
}

/** When each main call reached the forwarder, performance.now() ms. */
const mainCalls: number[] = [];
const model = await startOfflineModel();
const forwarder = await startModelForwarder(model.url, {
  onCall: (arrivedAt, body) => {
    if (offersTools(body)) mainCalls.push(arrivedAt);
  },
});
const hub = await TestHub.start();

async function measure(backend: Backend) {
  const notices: number[] = [];
  const { session, stop } = await startInProcessRunner(hub, {
    backend,
    modelUrl: forwarder.url,
    approvals: 'ask',
    options: { modelCallComing: () => notices.push(performance.now()) },
  });
  const ahead = { message: [] as number[], answer: [] as number[], result: [] as number[], tool: [] as number[] };
  try {
    for (let turn = 0; turn <= turns; turn++) {
      notices.length = 0;
      mainCalls.length = 0;
      const { messageId } = await session.sendMessage(scripted(`turn ${turn}`, { tool: 'shell', command: 'true' }));
      const asked = await session.waitFor(
        () => session.events().find((e) => e.messageId === messageId && e.event.type === 'approval.request')?.event,
        'the approval request',
      );
      if (asked.type !== 'approval.request') throw new Error('not an approval request');
      await session.decide(asked.approvalId, 'allow');
      const done = await waitTurnDone(session, messageId);
      if ('error' in done) throw new Error(`turn ${turn}: ${JSON.stringify(done.error)}`);
      const [message, answer, result] = notices;
      const [first, second] = mainCalls;
      if (notices.length !== 3 || mainCalls.length !== 2 || !message || !answer || !result || !first || !second)
        throw new Error(
          `turn ${turn}: ${notices.length} notices and ${mainCalls.length} main calls (expected 3 and 2)`,
        );
      // The first turn starts the CLI's caches; it is left out.
      if (turn === 0) continue;
      ahead.message.push(first - message);
      ahead.answer.push(second - answer);
      ahead.result.push(second - result);
      ahead.tool.push(result - answer);
    }
  } finally {
    await stop();
  }
  return ahead;
}

try {
  console.log(`bench/runner/call-notice: medians of ${turns} turns, ms from the notice to the call it announced`);
  console.log('backend  after a message  after the answer  after the result  (answer → result: the tool)');
  for (const parsed of backends) {
    if (!parsed.success) continue;
    const a = await measure(parsed.data);
    const f = (xs: number[]) => median(xs).toFixed(1).padStart(8);
    console.log(
      `${parsed.data.padEnd(7)}  ${f(a.message)}         ${f(a.answer)}          ${f(a.result)}          ${f(a.tool)}`,
    );
  }
} finally {
  await hub.close();
  forwarder.close();
  await model.close();
}
