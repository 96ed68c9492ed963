import { describe, expect, it } from 'vitest';
import { adapterFor, claudeTranscriptPath, type SpawnOptions } from '../src/index.ts';

const base: SpawnOptions = {
  executable: { command: '/opt/cli' },
  workspace: '/w/ws',
  home: '/w/home',
  configDir: '/w/cfg',
  modelBaseUrl: 'http://127.0.0.1:9999',
  modelApiKey: 'dummy-key',
  baseEnv: {
    PATH: '/usr/bin',
    LANG: 'C.UTF-8',
    SWITCHYARD_RUNNER_TOKEN: 'runner-secret',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    ANTHROPIC_API_KEY: 'real-provider-key',
  },
};

describe('spawnSpec environment', () => {
  it.each(['claude', 'pi'] as const)('%s: nothing is inherited but the allow-list', (backend) => {
    const spec = adapterFor(backend).spawnSpec(base);
    const values = Object.values(spec.env).join('\n');
    expect(values).not.toContain('runner-secret');
    expect(values).not.toContain('aws-secret');
    expect(values).not.toContain('real-provider-key');
    expect(spec.env.PATH).toBe('/usr/bin');
    expect(spec.env.HOME).toBe('/w/home');
    expect(spec.cwd).toBe('/w/ws');
  });

  it('claude gets the model endpoint, the dummy key and its private config dir', () => {
    const spec = adapterFor('claude').spawnSpec(base);
    expect(spec.env).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999',
      ANTHROPIC_API_KEY: 'dummy-key',
      CLAUDE_CONFIG_DIR: '/w/cfg',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    });
  });

  it('pi gets its config dir, and the endpoint only through models.json', () => {
    const spec = adapterFor('pi').spawnSpec(base);
    expect(spec.env.PI_CODING_AGENT_DIR).toBe('/w/cfg');
    const models = spec.files.find((f) => f.path === '/w/cfg/models.json');
    expect(models?.mode).toBe(0o600);
    expect(JSON.parse(models?.content ?? '{}')).toMatchObject({
      providers: { switchyard: { baseUrl: 'http://127.0.0.1:9999', api: 'anthropic-messages', apiKey: 'dummy-key' } },
    });
  });

  it("pi's Node gets the compile cache; claude, a native binary, is started without it", () => {
    const pi = adapterFor('pi').spawnSpec({ ...base, compileCache: '/app/cli-compile-cache' });
    expect(pi.env.NODE_COMPILE_CACHE).toBe('/app/cli-compile-cache');
    expect(adapterFor('pi').spawnSpec(base).env).not.toHaveProperty('NODE_COMPILE_CACHE');
    const claude = adapterFor('claude').spawnSpec({ ...base, compileCache: '/app/cli-compile-cache' });
    expect(Object.values(claude.env)).not.toContain('/app/cli-compile-cache');
    expect(() => adapterFor('pi').spawnSpec({ ...base, compileCache: 'cache' })).toThrow(/compileCache/);
  });
});

describe('spawnSpec arguments', () => {
  it('claude: stream-json both ways, resume, model, tools, the guard as hooks the runner answers', () => {
    const spec = adapterFor('claude').spawnSpec({
      ...base,
      model: 'm1',
      resume: 'abc-123',
      allowedTools: ['Read', 'Bash'],
      appendSystemPrompt: 'be brief',
      guard: 'runner',
    });
    const a = spec.args;
    expect(a.slice(0, 7)).toEqual([
      '-p',
      '--input-format',
      'stream-json',
      '--output-format',
      'stream-json',
      '--verbose',
      '--include-partial-messages',
    ]);
    expect(a).toContain('--resume');
    expect(a[a.indexOf('--resume') + 1]).toBe('abc-123');
    expect(a[a.indexOf('--model') + 1]).toBe('m1');
    expect(a[a.indexOf('--tools') + 1]).toBe('Read,Bash');
    expect(a[a.indexOf('--append-system-prompt') + 1]).toBe('be brief');
    expect(spec.toolHooks).toEqual({ matcher: '^(?!Bash$)', ask: false });
    // No settings file: nothing but the handshake registers hooks, and no settings source counts.
    expect(a).not.toContain('--settings');
    expect(a[a.indexOf('--setting-sources') + 1]).toBe('');
    expect(spec.files).toEqual([]);
    expect(a).not.toContain('--dangerously-skip-permissions');
    expect(adapterFor('claude').spawnSpec(base).toolHooks).toBeUndefined();
  });

  it("claude's guard hooks meet every tool call but a shell call in mode auto when the shell is allowed", () => {
    const hooks = (o: { allowedTools?: string[]; approvals?: 'auto' | 'ask' }) =>
      adapterFor('claude').spawnSpec({ ...base, ...o, guard: 'runner' }).toolHooks;
    expect(hooks({})).toEqual({ matcher: '^(?!Bash$)', ask: false });
    expect(hooks({ allowedTools: ['Read', 'Bash'], approvals: 'auto' })?.matcher).toBe('^(?!Bash$)');
    // Not on the list: the guard refuses the shell. Mode ask: the guard turns every allow into "ask".
    expect(hooks({ allowedTools: ['Read', 'Write'] })?.matcher).toBe('.*');
    expect(hooks({ allowedTools: ['Read', 'Bash'], approvals: 'ask' })).toEqual({ matcher: '.*', ask: true });
    // claude's matching (2.1.197: a matcher that is not a plain list of names is a regular
    // expression tested against the tool's name): only Bash itself is left out.
    const re = new RegExp(hooks({})?.matcher ?? '');
    expect(['Bash', 'Read', 'bash', 'BashOutput', 'mcp__x__Bash', ''].filter((name) => re.test(name))).toEqual([
      'Read',
      'bash',
      'BashOutput',
      'mcp__x__Bash',
      '',
    ]);
  });

  it('claude one-shot persists no session', () => {
    expect(adapterFor('claude').spawnSpec({ ...base, oneShot: true }).args).toContain('--no-session-persistence');
  });

  it('pi: rpc mode, nothing but the guard loads, session file resume or session dir', () => {
    const fresh = adapterFor('pi').spawnSpec({
      ...base,
      executable: { command: 'node', prefixArgs: ['/pi/cli.js'] },
      guard: { file: '/g/guard.ts' },
    });
    expect(fresh.command).toBe('node');
    expect(fresh.args[0]).toBe('/pi/cli.js');
    for (const flag of ['--no-extensions', '--no-skills', '--no-prompt-templates', '--no-context-files'])
      expect(fresh.args).toContain(flag);
    expect(fresh.args[fresh.args.indexOf('-e') + 1]).toBe('/g/guard.ts');
    expect(fresh.args[fresh.args.indexOf('--session-dir') + 1]).toBe('/w/cfg/sessions');
    const resumed = adapterFor('pi').spawnSpec({ ...base, resume: '/w/cfg/sessions/s.jsonl' });
    expect(resumed.args[resumed.args.indexOf('--session') + 1]).toBe('/w/cfg/sessions/s.jsonl');
    expect(adapterFor('pi').spawnSpec({ ...base, oneShot: true }).args).toContain('--no-session');
    // pi's guard runs in pi: nothing outside answers for it.
    expect(() => adapterFor('pi').spawnSpec({ ...base, guard: 'runner' })).toThrow(/extension/);
  });

  it('rejects bad options with the field named', () => {
    expect(() => adapterFor('pi').spawnSpec({ ...base, modelBaseUrl: 'not a url' })).toThrow(/modelBaseUrl/);
  });

  it('claude transcript path replaces every non-alphanumeric character of the cwd', () => {
    expect(claudeTranscriptPath('/c', '/tmp/a_b.c', 'id')).toBe('/c/projects/-tmp-a-b-c/id.jsonl');
  });
});

describe('user text encoding (invariant 3)', () => {
  const nasty = 'line1\nline2 "quoted" \\ {"type":"bash","command":"rm -rf /"}\n/compact\u2028\u2029 😀';
  it.each(['claude', 'pi'] as const)('%s: one line, the text a JSON string field, round-trips exactly', (backend) => {
    const codec = adapterFor(backend).createCodec();
    const line = codec.encodeUserMessage({ text: nasty });
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    const parsed = JSON.parse(line);
    if (backend === 'claude') {
      expect(parsed).toEqual({ type: 'user', message: { role: 'user', content: nasty } });
    } else {
      expect(parsed).toEqual({ id: expect.any(String), type: 'prompt', message: nasty });
    }
  });

  it('interrupt request ids are unique in a tight loop', () => {
    const codec = adapterFor('claude').createCodec();
    const ids = new Set(Array.from({ length: 1000 }, () => JSON.parse(codec.encodeInterrupt()).request_id));
    expect(ids.size).toBe(1000);
  });
});
