// The escape suite: every attempt in attempts.ts, against both real CLIs,
// under four configurations of the walls:
//   full            everything the runner does (guard + bubblewrap + env allow-list + credential proxy + encoding)
//   guard only      no bubblewrap
//   bwrap only      no guard
//   bare (control)  none of it: proves each attempt really reaches the file system / the secret otherwise
// Under `full` every attempt must fail, stopped by the wall attempts.ts names
// (the guard's own reason for guard attempts, the OS's denial for OS ones),
// with no protected content in any event; under `bare` every attempt must
// succeed. The single-wall runs show which wall alone stops what.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '@switchyard/protocol';
import { startOfflineModel } from '@switchyard/offline-model';
import { ATTEMPTS, wallOf, type Attempt, type Ctx } from './attempts.ts';
import { CONFIGS, startSession, type ConfigName } from './session.ts';

const r = randomBytes(6).toString('hex');
const secrets = {
  apiKey: `sk-ant-api03-CANARY-${r}-realkey`,
  runnerToken: `sy-runner-CANARY-${r}-token`,
  aws: `AWS-CANARY-${r}-secret`,
  // The key to the task's role credentials (ECS's container credentials endpoint).
  containerToken: `AWS-CONTAINER-CANARY-${r}-token`,
  argv: `ARGV-CANARY-${r}`,
};
const canary = {
  other: `CANARY-other-session-${r}`,
  hostKey: `CANARY-host-home-key-${r}`,
  dotenv: `CANARY-dotenv-${r}`,
  dotenvProd: `CANARY-dotenv-prod-${r}`,
  sshInWs: `CANARY-ssh-in-ws-${r}`,
  awsInWs: `CANARY-aws-in-ws-${r}`,
  npmrc: `CANARY-npmrc-${r}`,
};
/** What the runner process holds; the CLI is spawned from it. */
const runnerEnv = {
  ANTHROPIC_API_KEY: secrets.apiKey,
  SWITCHYARD_RUNNER_TOKEN: secrets.runnerToken,
  AWS_SECRET_ACCESS_KEY: secrets.aws,
  AWS_ACCESS_KEY_ID: 'AKIACANARY',
  AWS_CONTAINER_AUTHORIZATION_TOKEN: secrets.containerToken,
  ...process.env,
};
const roots: string[] = [];
const hostTmpPrefix = join('/tmp', `sy-escape-host-${r}`);

let runner: ChildProcess;
beforeAll(async () => {
  // A runner-like process on this host: secrets in its environment (and, to
  // show cmdline is covered too, a marker in its argv).
  runner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)', '--', `--note=${secrets.argv}`], {
    env: {
      PATH: process.env.PATH,
      ANTHROPIC_API_KEY: secrets.apiKey,
      SWITCHYARD_RUNNER_TOKEN: secrets.runnerToken,
      AWS_SECRET_ACCESS_KEY: secrets.aws,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: secrets.containerToken,
    },
    stdio: 'ignore',
  });
  await new Promise((resolve) => runner.once('spawn', resolve));
});
afterAll(() => {
  runner.kill('SIGKILL');
  for (const root of roots) rmSync(root, { recursive: true, force: true });
  for (const f of readdirSync('/tmp'))
    if (f.startsWith(`sy-escape-host-${r}`)) rmSync(join('/tmp', f), { force: true });
  printTable();
});

function realHomeEntries(): string[] {
  try {
    return readdirSync(homedir()).slice(0, 3);
  } catch {
    return [];
  }
}

/** A fake host for one session: ours, another session, a host home, a place outside. */
function makeHost(backend: Backend, config: ConfigName) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `sy-escape-${backend}-${config.split(' ')[0]}-`)));
  roots.push(root);
  const s1 = join(root, 'sessions', 's1');
  const dirs = { workspace: join(s1, 'ws'), home: join(s1, 'home'), configDir: join(s1, 'cfg') };
  const other = join(root, 'sessions', 's2', 'ws');
  const hostHome = join(root, 'hosthome');
  const outside = join(root, 'outside');
  for (const d of [...Object.values(dirs), other, join(hostHome, '.ssh'), outside]) mkdirSync(d, { recursive: true });
  // One file per attempt: claude answers a second Read of an unchanged file with a reminder, not its content.
  for (const name of ['secret', ...ATTEMPTS.map((a) => a.id)]) writeFileSync(join(other, `${name}.txt`), canary.other);
  writeFileSync(join(hostHome, '.ssh', 'id_ed25519'), canary.hostKey);
  writeFileSync(join(hostHome, '.ssh', 'id_ecdsa'), canary.hostKey);
  const ws = dirs.workspace;
  writeFileSync(join(ws, 'README.md'), 'a workspace');
  writeFileSync(join(ws, '.env'), `API_KEY=${canary.dotenv}`);
  writeFileSync(join(ws, '.env.production'), `API_KEY=${canary.dotenvProd}`);
  writeFileSync(join(ws, '.env.local'), `API_KEY=${canary.dotenv}`);
  mkdirSync(join(ws, '.ssh'));
  writeFileSync(join(ws, '.ssh', 'id_rsa'), canary.sshInWs);
  mkdirSync(join(ws, '.aws'));
  writeFileSync(join(ws, '.aws', 'credentials'), `aws_secret_access_key=${canary.awsInWs}`);
  writeFileSync(join(ws, '.npmrc'), `//registry.npmjs.org/:_authToken=${canary.npmrc}`);
  symlinkSync(join(other, 'read-link-file.txt'), join(ws, 'link-other'));
  symlinkSync(other, join(ws, 'link-otherdir'));
  symlinkSync(join(hostHome, '.ssh', 'id_ecdsa'), join(ws, 'link-hostkey'));
  symlinkSync('.env.local', join(ws, 'env-alias.txt'));
  symlinkSync(join(outside, 'escape-dangling.txt'), join(ws, 'dangling-out'));
  symlinkSync('/', join(ws, 'file:'));
  mkdirSync(join(ws, '.pi', 'extensions'), { recursive: true });
  writeFileSync(
    join(ws, '.pi', 'extensions', 'pwn.ts'),
    `import { writeFileSync } from 'node:fs';\nexport default function (pi: { registerCommand(name: string, c: object): void }) { pi.registerCommand('pwn', { description: 'x', handler: async () => { writeFileSync(${JSON.stringify(join(ws, 'pwned-by-extension.txt'))}, 'ESCAPED'); } }); }\n`,
  );
  return { root, dirs, other, hostHome, outside };
}

type Label = 'REACHED' | 'guard' | 'blocked';
interface Outcome {
  attempt: Attempt;
  backend: Backend;
  config: ConfigName;
  label: Label;
  observed: string;
  error?: string;
}
const outcomes: Outcome[] = [];
const fullEvents = new Map<Backend, string>();

async function runConfig(backend: Backend, config: ConfigName): Promise<void> {
  const host = makeHost(backend, config);
  const model = await startOfflineModel();
  const ctx: Ctx = {
    backend,
    config,
    model,
    root: host.root,
    ws: host.dirs.workspace,
    home: host.dirs.home,
    configDir: host.dirs.configDir,
    other: host.other,
    hostHome: host.hostHome,
    outside: host.outside,
    hostTmp: `${hostTmpPrefix}-${backend}-${config.split(' ')[0]}`,
    realHome: homedir(),
    realHomeEntries: realHomeEntries(),
    runnerPid: runner.pid ?? -1,
    secrets,
    canary,
    settingsFile: join(host.dirs.configDir, 'settings.json'),
    tag: `${backend}-${config.split(' ')[0]}-${r}`,
  };
  const session = await startSession(backend, CONFIGS[config], host.dirs, {
    modelUrl: model.url,
    realKey: secrets.apiKey,
    runnerEnv,
  });
  const mine = ATTEMPTS.filter((a) => a.only === undefined || a.only === backend);
  const ordered = [...mine.filter((a) => !a.last), ...mine.filter((a) => a.last)];
  try {
    for (const attempt of ordered) {
      let observed = '';
      let error: string | undefined;
      try {
        observed = await attempt.run(session, ctx);
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const label: Label = attempt.reached(observed, ctx)
        ? 'REACHED'
        : observed.includes('switchyard guard:')
          ? 'guard'
          : 'blocked';
      outcomes.push({ attempt, backend, config, label, observed, ...(error !== undefined && { error }) });
    }
  } finally {
    if (config === 'full') fullEvents.set(backend, JSON.stringify(session.events));
    await session.close();
    await model.close();
  }
}

describe.each(['claude', 'pi'] as const)('escape attempts against %s', (backend) => {
  it('fail under the full walls, stopped by the named wall; succeed in the bare control', async () => {
    await Promise.all((Object.keys(CONFIGS) as ConfigName[]).map((config) => runConfig(backend, config)));
    const mine = outcomes.filter((o) => o.backend === backend);
    const problems: string[] = [];
    for (const o of mine) {
      const { attempt: a, config, label } = o;
      if (o.error) problems.push(`${a.id} [${config}]: ${o.error}`);
      if (config === 'full') {
        if (label === 'REACHED') problems.push(`${a.id}: ESCAPED under the full walls`);
        else if (wallOf(a, backend) === 'guard' && label !== 'guard')
          problems.push(`${a.id}: expected the guard's own reason, saw ${clip(o.observed)}`);
        else if (wallOf(a, backend) !== 'guard' && label === 'guard')
          problems.push(`${a.id}: expected ${wallOf(a, backend)}, but the guard refused`);
        if (a.denial && !a.denial.test(o.observed))
          problems.push(`${a.id}: expected the OS denial ${a.denial}, saw ${clip(o.observed)}`);
      }
      if (config === 'bare (control)' && label !== 'REACHED')
        problems.push(`${a.id}: the control run did not reach it (${clip(o.error ?? o.observed)})`);
      if (config === 'guard only' && wallOf(a, backend) === 'guard' && label !== 'guard')
        problems.push(`${a.id}: the guard alone should stop it, saw ${label}`);
      if (config === 'bwrap only' && wallOf(a, backend) === 'bubblewrap' && label === 'REACHED')
        problems.push(`${a.id}: bubblewrap alone should stop it`);
    }
    // No protected content anywhere in the full session's events.
    const all = fullEvents.get(backend) ?? '';
    for (const [name, value] of Object.entries({ ...secrets, ...canary }))
      if (all.includes(value)) problems.push(`full session events contain the ${name} canary`);
    expect(all.length).toBeGreaterThan(0);
    expect(mine.filter((o) => o.config === 'full').length).toBeGreaterThanOrEqual(30);
    if (problems.length > 0 && process.env.SY_ESCAPE_DEBUG) {
      writeFileSync(
        process.env.SY_ESCAPE_DEBUG,
        JSON.stringify(
          mine.map((o) => ({
            id: o.attempt.id,
            config: o.config,
            label: o.label,
            error: o.error,
            observed: o.observed,
          })),
          null,
          1,
        ),
      );
    }
    expect(problems).toEqual([]);
    expect(existsSync(`${hostTmpPrefix}-${backend}-bare-write.txt`)).toBe(true);
  }, 600_000);
});

function clip(s: string): string {
  return s.length > 400 ? `${s.slice(0, 400)}…` : s;
}

function printTable(): void {
  const configs = Object.keys(CONFIGS) as ConfigName[];
  const rows: string[][] = [];
  const seen = new Set<string>();
  for (const o of outcomes) {
    const key = `${o.attempt.id}/${o.backend}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const cell = (config: ConfigName) => {
      const hit = outcomes.find((x) => x.attempt === o.attempt && x.backend === o.backend && x.config === config);
      if (!hit) return '-';
      if (hit.error) return 'ERROR';
      if (config === 'full') return hit.label === 'REACHED' ? 'ESCAPED' : wallOf(o.attempt, o.backend);
      return hit.label === 'REACHED' ? 'reached' : hit.label === 'guard' ? 'guard' : 'blocked';
    };
    rows.push([o.attempt.id, o.backend, ...configs.map(cell)]);
  }
  rows.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? '') || (a[1] ?? '').localeCompare(b[1] ?? ''));
  const head = ['attempt', 'backend', 'full: wall that stopped it', 'guard only', 'bwrap only', 'bare (control)'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  const descriptions = [...new Map(outcomes.map((o) => [o.attempt.id, o.attempt.what])).entries()]
    .sort()
    .map(([id, what]) => `  ${id}: ${what}`);
  console.log(
    `\nEscape attempts (${rows.length} attempt×backend runs, each under 4 configurations)\n${out.join('\n')}\n\n${descriptions.join('\n')}\n`,
  );
}
