import { SpawnOptionsSchema, type SpawnOptions, type SpawnSpec } from '../adapter.ts';
import { allowListedEnv, shellQuote } from '../env.ts';

/** The guard hook's argument for sessions in approval mode `ask`. */
export const CLAUDE_HOOK_ASK_FLAG = '--ask';

export const CLAUDE_DEFAULT_TOOLS = ['Read', 'Write', 'Edit', 'Bash', 'Glob', 'Grep'];

/**
 * The tool calls claude runs the guard hook for: every one, except a shell call in approval mode
 * auto when the shell is on the session's list. The guard does not parse shell (the OS wall bounds
 * it), so for `Bash` it checks the allow-list, which such a call passes by construction, and the
 * `file:` URL rule, which means nothing to a shell that can read any file it sees without one: a
 * new process per shell call (~80–100 ms) that decides nothing. In mode ask every call meets it
 * (it turns an allow into "ask"). claude (2.1.197) tests a matcher that is not a plain list of
 * names as a regular expression against the tool's name and its aliases (Bash has none), so a tool
 * it does not know still meets the hook (docs/DESIGN.md "The guard").
 */
function claudeHookMatcher(tools: readonly string[], approvals: 'auto' | 'ask'): string {
  return approvals === 'auto' && tools.includes('Bash') ? '^(?!Bash$)' : '.*';
}

export function claudeSpawnSpec(input: SpawnOptions): SpawnSpec {
  const o = SpawnOptionsSchema.parse(input);
  const tools = o.allowedTools ?? CLAUDE_DEFAULT_TOOLS;
  const args = [
    ...o.executable.prefixArgs,
    '-p',
    '--input-format',
    'stream-json',
    '--output-format',
    'stream-json',
    '--verbose',
    '--include-partial-messages',
    // Tools outside the list do not exist for the model.
    '--tools',
    tools.join(','),
    // auto: those inside run without a permission prompt (headless), still behind the guard hook.
    // ask: claude asks over the control protocol (`can_use_tool` on stdout, answered on stdin);
    // the guard hook answers "ask" for every call it allows, so claude's own read-only
    // shortcuts never skip the question, and a guard deny never reaches it.
    ...(o.approvals === 'ask' ? ['--permission-prompt-tool', 'stdio'] : ['--allowedTools', tools.join(',')]),
    // Only our --settings file counts: no user/project settings can add hooks
    // or permissions behind the runner's back.
    '--setting-sources',
    '',
    '--disable-slash-commands',
  ];
  if (o.model) args.push('--model', o.model);
  if (o.resume) args.push('--resume', o.resume);
  if (o.oneShot) args.push('--no-session-persistence');
  if (o.appendSystemPrompt) args.push('--append-system-prompt', o.appendSystemPrompt);

  const files: SpawnSpec['files'] = [];
  if (o.guard) {
    const settingsPath = `${o.configDir}/switchyard-settings.json`;
    const command = claudeHookCommand(o.guard, { ask: o.approvals === 'ask' });
    files.push({
      path: settingsPath,
      content: JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: claudeHookMatcher(tools, o.approvals), hooks: [{ type: 'command', command }] }],
        },
      }),
    });
    args.push('--settings', settingsPath);
  }

  const extra: Record<string, string> = {
    HOME: o.home,
    CLAUDE_CONFIG_DIR: o.configDir,
    ANTHROPIC_BASE_URL: o.modelBaseUrl,
    ANTHROPIC_API_KEY: o.modelApiKey,
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
  if (o.retry) extra.CLAUDE_CODE_MAX_RETRIES = String(o.retry.maxRetries);
  return {
    command: o.executable.command,
    args,
    env: allowListedEnv(o.baseEnv, extra),
    cwd: o.workspace,
    files,
  };
}

/** claude keeps transcripts at $CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics as '-'>/<id>.jsonl */
export function claudeTranscriptPath(configDir: string, workspace: string, sessionId: string): string {
  return `${configDir}/projects/${workspace.replace(/[^A-Za-z0-9]/g, '-')}/${sessionId}.jsonl`;
}

/**
 * The PreToolUse hook command the settings file gives claude (the runner's guard self-test runs
 * exactly this). claude runs it with /bin/sh -c and treats any exit but 0 and 2 as a
 * non-blocking error: a guard that crashes would fail OPEN. `|| exit 2` turns every failure to
 * run it (missing node, syntax error, signal) into a block.
 */
export function claudeHookCommand(
  guard: { node: string; file: string; preload?: string | undefined },
  opts: { ask?: boolean } = {},
): string {
  const preload = guard.preload === undefined ? '' : ` --import ${shellQuote(guard.preload)}`;
  // --ask: a call the guard allows is answered "ask" (a person decides) instead of silence.
  return `${shellQuote(guard.node)}${preload} ${shellQuote(guard.file)}${opts.ask ? ` ${CLAUDE_HOOK_ASK_FLAG}` : ''} || exit 2`;
}
