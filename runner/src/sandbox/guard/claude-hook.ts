// claude's PreToolUse command hook: `'<node>' '<this file>' || exit 2`
// (protocol/src/claude/spawn.ts). Reads the hook JSON on stdin; exit 0 with no
// output lets the call through to claude's normal flow, exit 2 blocks it and
// claude hands our stderr to the model as the tool result.
//
// claude treats any exit other than 0 and 2 as a non-blocking error: a hook
// that crashes FAILS OPEN. So everything below exits 2 on any failure of its
// own: the rules are imported dynamically inside the try (a missing or broken
// rules file denies instead of crashing), stray exceptions and rejections are
// caught at the process level, a stalled read times out into a denial, and the
// hook command adds `|| exit 2` for whatever still escapes (a syntax error in
// this very file, a missing node binary, a signal).

const BLOCK = 2;
/** claude then asks over its control protocol (`can_use_tool`) instead of running the tool. */
const ASK_ANSWER = JSON.stringify({
  hookSpecificOutput: {
    hookEventName: 'PreToolUse',
    permissionDecision: 'ask',
    permissionDecisionReason: 'switchyard: this session asks a person before each tool call',
  },
});
/** claude's own hook timeout is 60 s and a timeout fails open: deny well before it. */
const SELF_TIMEOUT_MS = 20_000;
const MAX_INPUT_BYTES = 16 * 1024 * 1024;

let settled = false;
function finish(code: 0 | typeof BLOCK, message?: string): void {
  if (settled) return;
  settled = true;
  if (message !== undefined) process.stderr.write(`${message}\n`);
  process.exit(code);
}
const block = (message: string) => finish(BLOCK, message);

process.on('uncaughtException', (err) =>
  block(`switchyard guard: internal error, refusing the call (${err?.message ?? String(err)})`),
);
process.on('unhandledRejection', (err) =>
  block(`switchyard guard: internal error, refusing the call (${err instanceof Error ? err.message : String(err)})`),
);
setTimeout(() => block('switchyard guard: timed out deciding, refusing the call'), SELF_TIMEOUT_MS);

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_INPUT_BYTES) throw new Error('hook input too large');
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function run(): Promise<void> {
  const [{ decide }, { parsePolicy, POLICY_ENV }, { nodeFs }] = await Promise.all([
    import('./rules.ts'),
    import('./policy.ts'),
    import('./resolve.ts'),
  ]);
  const policy = parsePolicy(process.env[POLICY_ENV]);
  if (!policy.ok) return block(`switchyard guard: ${policy.reason}; refusing every tool call`);
  const text = await readStdin();
  let hook: unknown;
  try {
    hook = JSON.parse(text);
  } catch {
    return block('switchyard guard: hook input is not JSON, refusing the call');
  }
  if (typeof hook !== 'object' || hook === null || Array.isArray(hook))
    return block('switchyard guard: hook input is not an object, refusing the call');
  const h = hook as Record<string, unknown>;
  if (typeof h.tool_name !== 'string') return block('switchyard guard: hook input has no tool_name, refusing the call');
  const decision = decide(
    { tool: h.tool_name, input: h.tool_input, cwd: typeof h.cwd === 'string' ? h.cwd : undefined },
    policy.policy,
    nodeFs(),
  );
  if (decision.allow) {
    // Approval mode `ask` (the spawn adds --ask): the guard allows, a person decides next.
    // Pipes are written synchronously on Linux, so the line is out before the exit.
    if (process.argv.includes('--ask')) process.stdout.write(`${ASK_ANSWER}\n`);
    return finish(0);
  }
  return block(decision.reason);
}

run().catch((err: unknown) =>
  block(`switchyard guard: internal error, refusing the call (${err instanceof Error ? err.message : String(err)})`),
);
