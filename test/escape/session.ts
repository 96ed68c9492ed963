// One CLI session for the escape suite, with a chosen set of walls. The walls
// are the runner's own code (Sandbox, credential proxy, the adapters'
// environment allow-list); turning one off is exactly what the runner would do
// without it, so a control run shows what that wall is holding back.
import { adapterFor, type AgentEvent, type Backend } from '@switchyard/protocol';
import { locateCli, type PreparedSpawn, startReady } from '@switchyard/runner/cli';
import { startModelRoute, Sandbox } from '@switchyard/runner/sandbox';

export interface Walls {
  /** The tool-call guard (claude hook / pi extension). */
  guard: boolean;
  /** bubblewrap around the CLI. */
  bwrap: boolean;
  /** The CLI's environment built from the allow-list (off: the whole runner environment leaks in). */
  envAllowList: boolean;
  /** The credential proxy (off: the CLI holds the real key). */
  proxy: boolean;
  /** pi: --no-extensions (off: extension discovery, as pi does by default). */
  noExtensions: boolean;
  /** User text goes through the codec (off: the text is written to stdin as it is). */
  encoding: boolean;
}

export const CONFIGS = {
  full: { guard: true, bwrap: true, envAllowList: true, proxy: true, noExtensions: true, encoding: true },
  'guard only': { guard: true, bwrap: false, envAllowList: true, proxy: true, noExtensions: true, encoding: true },
  'bwrap only': { guard: false, bwrap: true, envAllowList: true, proxy: true, noExtensions: true, encoding: true },
  'bare (control)': {
    guard: false,
    bwrap: false,
    envAllowList: false,
    proxy: false,
    noExtensions: false,
    encoding: false,
  },
} satisfies Record<string, Walls>;
export type ConfigName = keyof typeof CONFIGS;

export interface SessionDirs {
  workspace: string;
  home: string;
  configDir: string;
}

export interface Session {
  backend: Backend;
  walls: Walls;
  events: AgentEvent[];
  stdout: string[];
  /** Sends user text through the codec and resolves with that turn's events. */
  turn(text: string, timeoutMs?: number): Promise<AgentEvent[]>;
  /** Writes a raw stdin line (no codec), waits until a stdout line matches, and returns that line. */
  raw(line: string, until: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startSession(
  backend: Backend,
  walls: Walls,
  dirs: SessionDirs,
  o: { modelUrl: string; realKey: string; runnerEnv: Record<string, string | undefined> },
): Promise<Session> {
  const sandbox = new Sandbox({ mode: walls.bwrap ? 'bubblewrap' : 'none', guard: walls.guard });
  // Under bubblewrap the CLI has a network namespace of its own: the proxy's socket is its only way to a model.
  const proxy = walls.proxy ? await startModelRoute(sandbox.mode, o.modelUrl, o.realKey) : undefined;
  const adapter = adapterFor(backend);
  let spec: PreparedSpawn = adapter.spawnSpec({
    executable: locateCli(backend),
    ...dirs,
    modelBaseUrl: proxy?.baseUrl ?? o.modelUrl,
    modelApiKey: proxy?.apiKey ?? o.realKey,
    baseEnv: o.runnerEnv,
    retry: { maxRetries: 0, baseDelayMs: 1 },
    guard: sandbox.guardOption(backend),
  });
  if (!walls.envAllowList) spec = { ...spec, env: { ...definedOnly(o.runnerEnv), ...spec.env } };
  if (!walls.noExtensions) spec = { ...spec, args: spec.args.filter((a) => a !== '--no-extensions') };
  spec = await sandbox.prepare(spec, { backend, ...dirs, modelSocket: proxy?.socketPath });

  const events: AgentEvent[] = [];
  const stdout: string[] = [];
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  const codec = adapter.createCodec();
  // Ready first: claude's handshake is what registers its guard's hooks.
  const started = await startReady(
    backend,
    spec,
    codec,
    {
      onEvent: (e) => {
        events.push(e);
        wake();
      },
      onLine: (dir, line) => {
        if (dir === 'out') {
          stdout.push(line);
          wake();
        }
      },
    },
    90_000,
  );
  if (!started.ok) throw new Error(`${backend}: ${started.problem}`);
  const proc = started.proc;
  void proc.exited.then(wake);

  const until = (done: () => boolean, what: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (done()) finish(resolve);
        else if (!proc.running)
          finish(() =>
            reject(
              new Error(
                `${backend} CLI exited while waiting for ${what}: ${stdout.slice(-3).join('\n').slice(0, 1500)}`,
              ),
            ),
          );
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${backend}: timed out waiting for ${what}`))),
        timeoutMs,
      );
      const finish = (f: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        f();
      };
      waiters.add(check);
      check();
    });

  let turns = 0;
  return {
    backend,
    walls,
    events,
    stdout,
    async turn(text, timeoutMs = 90_000) {
      const start = events.length;
      const n = ++turns;
      proc.sendUserMessage({ text });
      await until(() => events.slice(start).some((e) => e.type === 'turn.done'), `turn ${n}`, timeoutMs);
      return events.slice(start);
    },
    async raw(line, match, timeoutMs = 90_000) {
      const start = stdout.length;
      proc.writeControl(`${line}\n`);
      await until(() => stdout.slice(start).some(match), 'a raw reply', timeoutMs);
      return stdout.slice(start).find(match) ?? '';
    },
    async close() {
      proc.closeInput();
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await proc.exited;
      clearTimeout(timer);
      proc.kill('SIGKILL');
      await proxy?.close();
    },
  };
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
