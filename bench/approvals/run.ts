// bench/approvals: what a tool approval costs on the wire, as ratios to the paths a plain turn
// already takes, through HTTP against the stack `npm start` runs (real claude, offline model).
//   ask:    the CLI prints can_use_tool → the SSE client holds approval.request,
//           vs the CLI prints a text delta → the SSE client holds that text.delta.
//   answer: POST /approvals/:id → the answer is on the CLI's stdin,
//           vs POST /messages → the user message is on the CLI's stdin.
// The CLI-side moments come from a pass-through in front of claude (cli-stamps.ts, set as
// SWITCHYARD_CLI_EXECUTABLE for the runners); all on one machine, one wall clock. Medians of
// --runs turns of one warm session.
// Run: npm run bench -- approvals   (or node bench/approvals/run.ts [--runs N])
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Api, type SseEvent } from '../../test/helpers/sse-client.ts';
import { startTestStack } from '../../test/helpers/test-stack.ts';
import { median } from '../stats.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
};
const RUNS = Number(arg('--runs', '10'));
const TURN_MS = 120_000;
const wall = () => performance.timeOrigin + performance.now();
const claude = resolve(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '@anthropic-ai',
  'claude-code',
  'bin',
  'claude.exe',
);

const running = await startTestStack('bench-approvals', {
  runnerEnv: {
    SWITCHYARD_CLI_EXECUTABLE: JSON.stringify({
      command: process.execPath,
      prefixArgs: [join(import.meta.dirname, 'cli-stamps.ts'), claude],
    }),
  },
});
try {
  const { stack } = running;
  const api = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  const id = (await api.call<{ id: string }>('POST', '/api/sessions', { approvals: 'ask' })).body.id;
  const sse = await api.events(id);
  const at = (e: SseEvent) => performance.timeOrigin + e.receivedAt;
  const rows: Array<{ delta: number; ask: number; message: number; answer: number }> = [];
  let stampsFile: string | undefined;
  for (let i = 0; i <= RUNS; i++) {
    const script = { text: `turn ${i}`, tool: 'write', path: `bench-${i}.txt`, content: 'x' };
    const tMessage = wall();
    const r = await api.call<{ messageId: string }>('POST', `/api/sessions/${id}/messages`, {
      text: `go\n#offline ${JSON.stringify(script)}`,
    });
    if (r.status !== 202) throw new Error(`message: ${r.status} ${r.text}`);
    const m = r.body.messageId;
    const delta = await sse.waitFor('text.delta', (e) => e.event === 'text.delta' && e.data.messageId === m, TURN_MS);
    const req = await sse.waitFor(
      'approval.request',
      (e) => e.event === 'approval.request' && e.data.messageId === m,
      TURN_MS,
    );
    stampsFile ??= join(dirname(String((req.data.input as { file_path: string }).file_path)), '.cli-stamps.jsonl');
    const tAnswer = wall();
    const a = await api.call('POST', `/api/sessions/${id}/approvals/${String(req.data.approvalId)}`, {
      decision: 'allow',
    });
    if (a.status !== 200) throw new Error(`answer: ${a.status} ${a.text}`);
    await sse.turnDone(m, TURN_MS);
    // The pass-through wrote this turn's four moments; the last of each kind is this turn's.
    const stamps = readFileSync(stampsFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; t: number });
    const last = (kind: string) => stamps.filter((s) => s.kind === kind).at(-1)?.t ?? Number.NaN;
    // Turn 0 starts the runner and the CLI: warm-up, not measured.
    if (i > 0)
      rows.push({
        delta: at(delta) - last('delta_out'),
        ask: at(req) - last('ask_out'),
        message: last('message_in') - tMessage,
        answer: last('answer_in') - tAnswer,
      });
  }
  await sse.close();
  const d = median(rows.map((x) => x.delta));
  const k = median(rows.map((x) => x.ask));
  const msg = median(rows.map((x) => x.message));
  const ans = median(rows.map((x) => x.answer));
  console.log(`approvals (claude, ${rows.length} warm turns, medians):`);
  console.log(
    `  CLI → SSE client:  text.delta ${d.toFixed(1)} ms, approval.request ${k.toFixed(1)} ms  → ratio ${(k / d).toFixed(2)}`,
  );
  console.log(
    `  POST → CLI stdin:  message ${msg.toFixed(1)} ms, approval answer ${ans.toFixed(1)} ms  → ratio ${(ans / msg).toFixed(2)}`,
  );
} finally {
  await running.stop();
}
