import { SpawnOptionsSchema, type SpawnOptions, type SpawnSpec } from '../adapter.ts';
import { allowListedEnv } from '../env.ts';
import { toolHooksFor } from './tool-hooks.ts';

export const CLAUDE_DEFAULT_TOOLS = ['Read', 'Write', 'Edit', 'Bash', 'Glob', 'Grep'];

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
    // auto: those inside run without a permission prompt (headless), still behind the guard's hook.
    // ask: claude asks over the control protocol (`can_use_tool` on stdout, answered on stdin);
    // the guard's hook answers "ask" for every call it allows, so claude's own read-only
    // shortcuts never skip the question, and a guard deny never reaches it.
    ...(o.approvals === 'ask' ? ['--permission-prompt-tool', 'stdio'] : ['--allowedTools', tools.join(',')]),
    // No settings file counts: no user/project settings can add hooks or permissions behind the
    // runner's back. The guard's hooks come with the readiness handshake (tool-hooks.ts).
    '--setting-sources',
    '',
    '--disable-slash-commands',
  ];
  if (o.model) args.push('--model', o.model);
  if (o.resume) args.push('--resume', o.resume);
  if (o.oneShot) args.push('--no-session-persistence');
  if (o.appendSystemPrompt) args.push('--append-system-prompt', o.appendSystemPrompt);

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
    files: [],
    ...(o.guard !== undefined && { toolHooks: toolHooksFor(tools, o.approvals) }),
  };
}

/** claude keeps transcripts at $CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics as '-'>/<id>.jsonl */
export function claudeTranscriptPath(configDir: string, workspace: string, sessionId: string): string {
  return `${configDir}/projects/${workspace.replace(/[^A-Za-z0-9]/g, '-')}/${sessionId}.jsonl`;
}
