import { SpawnOptionsSchema, type SpawnOptions, type SpawnSpec } from '../adapter.ts';
import { allowListedEnv } from '../env.ts';
import { PI_APPROVAL_ENV } from './approval.ts';

export const PI_DEFAULT_TOOLS = ['read', 'bash', 'edit', 'write', 'grep', 'find', 'ls'];
export const PI_PROVIDER = 'switchyard';
export const PI_DEFAULT_MODEL = 'claude-sonnet-4-5';

export function piSpawnSpec(input: SpawnOptions): SpawnSpec {
  const o = SpawnOptionsSchema.parse(input);
  // pi's guard runs in its own process: nothing answers for it from outside.
  if (o.guard === 'runner')
    throw new Error("pi loads its guard as an extension: guard must name the file, not 'runner'");
  const guard = o.guard;
  const model = o.model ?? PI_DEFAULT_MODEL;
  const tools = o.allowedTools ?? PI_DEFAULT_TOOLS;
  const args = [
    ...o.executable.prefixArgs,
    '--mode',
    'rpc',
    '--provider',
    PI_PROVIDER,
    '--model',
    model,
    // Discovery off; only the guard (explicit -e) may load. A `/command` from
    // an extension would bypass every hook, so nothing else is allowed in.
    '--no-extensions',
    '--no-skills',
    '--no-prompt-templates',
    '--no-context-files',
    '--no-themes',
    '--offline',
    '--tools',
    tools.join(','),
  ];
  if (guard) args.push('-e', guard.file);
  if (o.oneShot) args.push('--no-session');
  else if (o.resume) args.push('--session', o.resume);
  else args.push('--session-dir', `${o.configDir}/sessions`);
  if (o.appendSystemPrompt) args.push('--append-system-prompt', o.appendSystemPrompt);

  const models = {
    providers: {
      [PI_PROVIDER]: {
        baseUrl: o.modelBaseUrl.replace(/\/+$/, ''),
        api: 'anthropic-messages',
        apiKey: o.modelApiKey,
        // Declaring image input: pi otherwise replaces images with a placeholder.
        models: [{ id: model, reasoning: true, input: ['text', 'image'] }],
      },
    },
  };
  // provider.maxRetries 0: the SDK's own retries are invisible on the rpc
  // stream; pi's agent-level retries emit auto_retry_* and become turn.retry.
  const settings = o.retry
    ? {
        retry: {
          enabled: true,
          maxRetries: o.retry.maxRetries,
          baseDelayMs: o.retry.baseDelayMs,
          provider: { maxRetries: 0 },
        },
      }
    : { retry: { enabled: true, provider: { maxRetries: 0 } } };
  return {
    command: o.executable.command,
    args,
    env: allowListedEnv(o.baseEnv, {
      HOME: o.home,
      PI_CODING_AGENT_DIR: o.configDir,
      PI_OFFLINE: '1',
      PI_SKIP_VERSION_CHECK: '1',
      PI_TELEMETRY: '0',
      // The guard extension asks a person after its own checks (DESIGN "Tool approvals").
      ...(o.approvals === 'ask' && { [PI_APPROVAL_ENV]: 'ask' }),
      ...(guard && guardLoading(guard)),
      ...(o.compileCache !== undefined && { NODE_COMPILE_CACHE: o.compileCache }),
    }),
    cwd: o.workspace,
    files: [
      { path: `${o.configDir}/models.json`, content: JSON.stringify(models), mode: 0o600 },
      { path: `${o.configDir}/settings.json`, content: JSON.stringify(settings) },
    ],
  };
}

/**
 * pi compiles an extension with jiti: a babel transform, ~300 ms of every start, cached in the
 * CLI's own tmp dir, where the agent can write (on the next start a planted entry would load as
 * the guard). So jiti imports the guard natively (Node strips its types, from the runner's
 * read-only strip cache through the preload) and keeps no cache: a fallback transform is slow,
 * never stale and never someone else's. docs/DESIGN.md "The guard".
 */
function guardLoading(guard: Exclude<SpawnOptions['guard'], 'runner' | undefined>): Record<string, string> {
  return {
    JITI_TRY_NATIVE: 'true',
    JITI_FS_CACHE: 'false',
    // NODE_OPTIONS takes a double-quoted argument with backslash escapes, as JSON writes one.
    ...(guard.preload !== undefined && { NODE_OPTIONS: `--import ${JSON.stringify(guard.preload)}` }),
  };
}
