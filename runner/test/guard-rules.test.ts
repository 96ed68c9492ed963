import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicy, POLICY_ENV, type GuardPolicy } from '../src/sandbox/guard/policy.ts';
import { nodeFs, resolveReal, type Entry, type FsView } from '../src/sandbox/guard/resolve.ts';
import { decide, DENY_PREFIX, internalHost, pathCandidates } from '../src/sandbox/guard/rules.ts';
import { SENSITIVE_PATTERNS, sensitiveMatch } from '../src/sandbox/guard/sensitive-paths.ts';
import { maySearch, searchableBy, type DirOwner } from '../src/sandbox/cli-view.ts';

/** A fake tree: dirs end in '/', symlinks are '-> target', files are anything else. */
function fakeFs(tree: Record<string, string>): FsView {
  const entries = new Map<string, string>();
  for (const [p, v] of Object.entries(tree)) {
    entries.set(p.replace(/\/$/, ''), p.endsWith('/') ? 'dir' : v);
    // every ancestor is a dir
    const parts = p.replace(/\/$/, '').split('/');
    for (let i = 1; i < parts.length; i++) {
      const a = parts.slice(0, i).join('/') || '/';
      if (!entries.has(a)) entries.set(a, 'dir');
    }
  }
  entries.set('/', 'dir');
  return {
    lstat(path): Entry {
      const e = entries.get(path);
      if (e === undefined) return 'missing';
      if (e === 'dir') return 'dir';
      if (e.startsWith('-> ')) return 'symlink';
      if (e === 'EACCES') throw Object.assign(new Error('denied'), { code: 'EACCES' });
      return 'file';
    },
    readlink(path) {
      const e = entries.get(path);
      if (!e?.startsWith('-> ')) throw Object.assign(new Error('not a link'), { code: 'EINVAL' });
      return e.slice(3);
    },
  };
}

const fs = fakeFs({
  '/ws/': '',
  '/ws/src/app.ts': 'x',
  '/ws/notes.txt': 'x',
  '/ws/.env': 'SECRET',
  '/ws/out-link': '-> /etc/passwd',
  '/ws/rel-out': '-> ../other/secret.txt',
  '/ws/dir-link': '-> /other',
  '/ws/ssl-link': '-> /etc/ssl',
  '/ws/inner-link': '-> src',
  '/ws/env-alias': '-> .env',
  '/ws/dangling': '-> /outside/new.txt',
  '/ws/loop-a': '-> loop-b',
  '/ws/loop-b': '-> loop-a',
  '/ws/proc-link': '-> /proc/self/environ',
  '/ws/locked': 'EACCES',
  '/ws/it\u2019s/': '',
  '/etc/passwd': 'root',
  '/etc/ssl/': '',
  '/other/secret.txt': 'x',
});

const claude: GuardPolicy = {
  v: 1,
  backend: 'claude',
  workspace: '/ws',
  tools: ['Read', 'Write', 'Edit', 'Bash', 'Glob', 'Grep', 'WebFetch'],
};
const pi: GuardPolicy = {
  v: 1,
  backend: 'pi',
  workspace: '/ws',
  tools: ['read', 'write', 'edit', 'bash', 'grep', 'find', 'ls'],
};

const read = (p: unknown, policy = claude, cwd?: string) =>
  decide(
    { tool: policy === claude ? 'Read' : 'read', input: policy === claude ? { file_path: p } : { path: p }, cwd },
    policy,
    fs,
  );
const allowed = { allow: true };
const denied = (re: RegExp) => ({ allow: false, reason: expect.stringMatching(re) });

describe('resolveReal: the kernel view of a path', () => {
  it('follows symlinks component by component and applies .. to where a link points', () => {
    expect(resolveReal('/ws/ssl-link/../passwd', fs)).toEqual({ ok: true, path: '/etc/passwd', exists: true });
    expect(resolveReal('/ws/inner-link/app.ts', fs)).toEqual({ ok: true, path: '/ws/src/app.ts', exists: true });
    expect(resolveReal('/ws/rel-out', fs)).toEqual({ ok: true, path: '/other/secret.txt', exists: true });
  });
  it('takes a missing tail literally, .. included (mkdir -p would create it)', () => {
    expect(resolveReal('/ws/new/dir/file.txt', fs)).toEqual({ ok: true, path: '/ws/new/dir/file.txt', exists: false });
    expect(resolveReal('/ws/nope/../../etc/passwd', fs)).toEqual({ ok: true, path: '/etc/passwd', exists: true });
    // climbing back out of a missing dir re-enters real territory, where links count again
    expect(resolveReal('/ws/nope/../dir-link/secret.txt', fs)).toEqual({
      ok: true,
      path: '/other/secret.txt',
      exists: true,
    });
  });
  it('follows a dangling link to where a write would land', () => {
    expect(resolveReal('/ws/dangling', fs)).toEqual({ ok: true, path: '/outside/new.txt', exists: false });
  });
  it('refuses loops, /proc, paths through files, unreadable entries', () => {
    expect(resolveReal('/ws/loop-a', fs)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/too many symbolic links/),
    });
    expect(resolveReal('/ws/proc-link', fs)).toMatchObject({ ok: false, proc: true });
    expect(resolveReal('/ws/notes.txt/../.env', fs)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not a directory/),
    });
    expect(resolveReal('/ws/locked', fs)).toMatchObject({ ok: false, reason: expect.stringMatching(/EACCES/) });
  });
});

describe('decide: paths', () => {
  it('allows files inside the workspace, existing or new, absolute or relative', () => {
    expect(read('/ws/src/app.ts')).toEqual(allowed);
    expect(read('src/app.ts')).toEqual(allowed);
    expect(read('/ws/brand/new.txt')).toEqual(allowed);
    expect(read('/ws')).toEqual(allowed);
    expect(read('/ws/inner-link/app.ts')).toEqual(allowed);
    expect(read('src/app.ts', pi)).toEqual(allowed);
  });
  it('denies traversal, absolute paths and symlinks that leave the workspace', () => {
    expect(read('../other/secret.txt')).toEqual(denied(/outside the session workspace/));
    expect(read('/etc/passwd')).toEqual(denied(/resolves to \/etc\/passwd, outside/));
    expect(read('/ws/out-link')).toEqual(denied(/outside/));
    expect(read('/ws/rel-out')).toEqual(denied(/outside/));
    expect(read('/ws/dir-link/secret.txt')).toEqual(denied(/outside/));
    expect(read('/ws/ssl-link/../passwd')).toEqual(denied(/outside/));
    expect(read('/ws/nope/../../etc/passwd')).toEqual(denied(/outside/));
    expect(read('/ws/dangling')).toEqual(denied(/\/outside\/new\.txt, outside/));
    expect(read('/')).toEqual(denied(/outside/));
  });
  it('denies /proc outright, however it is reached', () => {
    expect(read('/proc/self/environ')).toEqual(denied(/\/proc/));
    expect(read('/proc/1/cmdline')).toEqual(denied(/\/proc/));
    expect(read('/ws/proc-link')).toEqual(denied(/\/proc/));
    expect(read('/ws/../proc/self/environ')).toEqual(denied(/\/proc/));
  });
  it('denies sensitive paths inside the workspace, by name or by where a link lands', () => {
    expect(read('/ws/.env')).toEqual(denied(/sensitive path \(\.env\*\)/));
    expect(read('.env.production', pi)).toEqual(denied(/sensitive/));
    expect(read('/ws/env-alias')).toEqual(denied(/resolves to a sensitive path/));
    expect(read('/ws/config/.ssh/id_ed25519')).toEqual(denied(/sensitive/));
    expect(read('/ws/.aws/credentials')).toEqual(denied(/cloud/));
    expect(read('/ws/.claude/settings.json')).toEqual(denied(/agent CLIs' own configuration/));
  });
  it('denies home-relative paths, NUL bytes, non-strings; what cannot be checked is refused', () => {
    expect(read('~/.bashrc')).toEqual(denied(/home directory/));
    expect(read('@~/.bashrc', pi)).toEqual(denied(/home directory/));
    expect(read('/ws/a\0b')).toEqual(denied(/NUL/));
    expect(read(42)).toEqual(denied(/not a string/));
    expect(read('/ws/loop-a')).toEqual(denied(/cannot be checked/));
    expect(read('/ws/locked')).toEqual(denied(/cannot be checked/));
  });
  it("checks every reading pi might make: '@' prefix, Unicode spaces, the look-alike variants it tries", () => {
    expect(read('@../other/secret.txt', pi)).toEqual(denied(/outside/));
    // pi retries a missing path with curly quotes: it's -> it’s, a real dir here
    expect(pathCandidates("/ws/it's/x", ['/ws'])).toContain('/ws/it\u2019s/x');
    expect(read('/ws/brand\u00A0new.txt', pi)).toEqual(allowed);
  });
  it('resolves relative paths against both the workspace and the cwd the CLI reports; both must pass', () => {
    expect(read('../other/secret.txt', claude, '/ws/src')).toEqual(denied(/outside/));
    // from /ws/src, "../notes.txt" is inside; from /ws it is not: refused
    expect(read('../notes.txt', claude, '/ws/src')).toEqual(denied(/outside/));
    expect(read('notes.txt', claude, '/etc')).toEqual(denied(/outside/));
  });
  it('checks every path-like key, not only the first', () => {
    const d = decide({ tool: 'Grep', input: { pattern: 'x', path: '/other' } }, claude, fs);
    expect(d).toEqual(denied(/outside/));
    expect(decide({ tool: 'Grep', input: { pattern: '\\.\\./x' } }, claude, fs)).toEqual(allowed);
  });
});

describe('decide: tools, globs, URLs', () => {
  it('denies tools not on the allow-list, with the list in the reason', () => {
    expect(decide({ tool: 'Task', input: {} }, claude, fs)).toEqual(
      denied(/"Task" is not on this session's allow-list/),
    );
    expect(decide({ tool: 'mcp__x__y', input: {} }, claude, fs)).toEqual(denied(/allow-list/));
  });
  it('lets shell commands through to the OS wall', () => {
    expect(decide({ tool: 'Bash', input: { command: 'cat /etc/passwd' } }, claude, fs)).toEqual(allowed);
  });
  it('keeps globs relative, without .., and away from sensitive names', () => {
    expect(decide({ tool: 'Glob', input: { pattern: '**/*.ts' } }, claude, fs)).toEqual(allowed);
    expect(decide({ tool: 'Glob', input: { pattern: '/etc/*' } }, claude, fs)).toEqual(denied(/absolute/));
    expect(decide({ tool: 'find', input: { pattern: '../**' } }, pi, fs)).toEqual(denied(/\.\./));
    expect(decide({ tool: 'Glob', input: { pattern: '{..,x}/secret' } }, claude, fs)).toEqual(denied(/\.\./));
    expect(decide({ tool: 'grep', input: { pattern: 'KEY', glob: '**/.env*' } }, pi, fs)).toEqual(denied(/sensitive/));
  });
  it('allows only http(s) URLs to public hosts; file: is refused anywhere in the input', () => {
    const fetch = (url: unknown) => decide({ tool: 'WebFetch', input: { url, prompt: 'x' } }, claude, fs);
    expect(fetch('https://example.com/docs')).toEqual(allowed);
    expect(fetch('file:///etc/passwd')).toEqual(denied(/file: URLs/));
    expect(fetch('ftp://example.com/x')).toEqual(denied(/only http: and https:/));
    expect(fetch('gopher://x')).toEqual(denied(/only http/));
    expect(fetch('/etc/passwd')).toEqual(denied(/not an absolute URL/));
    expect(fetch('http://127.0.0.1:8787/api')).toEqual(denied(/loopback/));
    expect(fetch('http://2130706433/')).toEqual(denied(/loopback/));
    expect(fetch('http://[::1]/')).toEqual(denied(/loopback/));
    expect(fetch('http://169.254.170.2/v2/credentials')).toEqual(denied(/link-local/));
    expect(fetch('http://localhost:3000')).toEqual(denied(/loopback/));
    expect(
      decide({ tool: 'Write', input: { file_path: '/ws/a', content: ' FILE:///etc/shadow' } }, claude, fs),
    ).toEqual(denied(/file: URLs/));
    expect(internalHost('example.com')).toBeUndefined();
    expect(internalHost('10.0.3.4')).toMatch(/private/);
  });
  it('never throws: a broken input or file system is a denial', () => {
    const broken: FsView = {
      lstat() {
        throw new TypeError('boom');
      },
      readlink() {
        throw new TypeError('boom');
      },
    };
    expect(decide({ tool: 'Read', input: { file_path: '/ws/a' } }, claude, broken)).toEqual(
      denied(/cannot be resolved/),
    );
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('hostile');
        },
      },
    );
    expect(decide({ tool: 'Read', input: hostile }, claude, fs)).toEqual(denied(/internal error/));
    expect(decide({ tool: 'Read', input: 'x' }, claude, fs)).toEqual(denied(/not an object/));
    for (const d of [read(null), read(undefined)]) expect(d).toEqual(allowed); // absent optional path: the tool's default (cwd)
  });
  it('every denial carries the guard prefix', () => {
    expect(read('/etc/passwd')).toMatchObject({ reason: expect.stringMatching(new RegExp(`^${DENY_PREFIX}`)) });
  });
});

describe('policy', () => {
  it('parses the runner policy and refuses anything else', () => {
    expect(parsePolicy(JSON.stringify(claude))).toEqual({ ok: true, policy: claude });
    expect(parsePolicy(undefined)).toMatchObject({ ok: false, reason: expect.stringContaining(POLICY_ENV) });
    expect(parsePolicy('{')).toMatchObject({ ok: false });
    expect(parsePolicy(JSON.stringify({ ...claude, v: 2 }))).toMatchObject({ ok: false });
    expect(parsePolicy(JSON.stringify({ ...claude, workspace: 'ws' }))).toMatchObject({ ok: false });
    expect(parsePolicy(JSON.stringify({ ...claude, tools: 'Read' }))).toMatchObject({ ok: false });
  });
});

describe('sensitive patterns', () => {
  it('match on whole segments', () => {
    expect(sensitiveMatch(['.env'])?.name).toBe('.env*');
    expect(sensitiveMatch(['src', 'my.envelope'])).toBeUndefined();
    expect(sensitiveMatch(['.sshrc-notes'])).toBeUndefined();
    expect(sensitiveMatch(['keys', 'server.pem'])).toBeDefined();
    expect(sensitiveMatch(['.config', 'gcloud', 'x'])).toBeDefined();
    expect(sensitiveMatch(['repo', '.git', 'config'])).toBeDefined();
    expect(sensitiveMatch(['repo', '.git', 'HEAD'])).toBeUndefined();
  });
  it('are all written down, with reasons, in DESIGN.md', () => {
    const design = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'DESIGN.md'), 'utf8');
    for (const p of SENSITIVE_PATTERNS) expect(design, `DESIGN.md lists ${p.name}`).toContain(p.name);
  });
});

describe('against the real file system', () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sy-guard-')));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const ws = join(root, 'ws');
  mkdirSync(join(ws, 'sub'), { recursive: true });
  mkdirSync(join(root, 'other'));
  writeFileSync(join(root, 'other', 'secret.txt'), 'secret');
  writeFileSync(join(ws, 'sub', 'ok.txt'), 'ok');
  symlinkSync(join(root, 'other'), join(ws, 'to-other'));
  symlinkSync('sub', join(ws, 'to-sub'));
  symlinkSync('/proc/self/root/etc/passwd', join(ws, 'proc-root'));
  const policy: GuardPolicy = { ...pi, workspace: ws };
  const r = (path: string) => decide({ tool: 'read', input: { path } }, policy, nodeFs());
  it('agrees with the kernel', () => {
    expect(r('sub/ok.txt')).toEqual(allowed);
    expect(r('to-sub/ok.txt')).toEqual(allowed);
    expect(r('to-other/secret.txt')).toEqual(denied(/outside/));
    expect(r('to-sub/../../other/secret.txt')).toEqual(denied(/outside/));
    expect(r('proc-root')).toEqual(denied(/\/proc/));
    expect(r('missing/../../other/secret.txt')).toEqual(denied(/outside/));
  });
});

describe("the container's view: only what the CLI's uid may search", () => {
  // The runner (uid 10001, CAP_DAC_OVERRIDE) answers claude's hooks; the CLI is 10002 in group 10001.
  const cli = { uid: 10002, gid: 10001 };
  const owners: Record<string, DirOwner> = {
    '/': { mode: 0o755, uid: 0, gid: 0 },
    '/ws': { mode: 0o770, uid: 10001, gid: 10001 },
    '/runner-only': { mode: 0o700, uid: 10001, gid: 10001 },
    '/etc': { mode: 0o755, uid: 0, gid: 0 },
  };
  const tree = fakeFs({
    '/ws/': '',
    '/ws/note.txt': 'x',
    '/ws/out': '-> /etc/passwd',
    '/runner-only/link': '-> /etc/hidden-name',
    '/runner-only/token.txt': 'x',
    '/etc/passwd': 'root',
  });
  const view = searchableBy(tree, cli, (dir) => {
    const o = owners[dir];
    if (o === undefined) throw new Error(`no owner for ${dir}`);
    return o;
  });
  const asCli = (file_path: string) => decide({ tool: 'Read', input: { file_path } }, claude, view);
  it('reads what the CLI could, and refuses what it could not without saying what is there', () => {
    expect(asCli('/ws/note.txt')).toEqual(allowed);
    expect(asCli('/ws/out')).toEqual(denied(/resolves to \/etc\/passwd, outside/));
    const throughLink = asCli('/runner-only/link/x');
    expect(throughLink).toEqual(
      denied(/\/runner-only\/link\/x cannot be checked \(cannot check \/runner-only\/link: EACCES\)/),
    );
    // The runner's own view names the link's target: that is what the CLI must not learn.
    expect(decide({ tool: 'Read', input: { file_path: '/runner-only/link/x' } }, claude, tree)).toEqual(
      denied(/hidden-name/),
    );
    // Whether an entry exists behind a closed directory: both read alike (the runner's own view
    // would say "is not a directory" for the file and "outside" for the missing one).
    expect(asCli('/runner-only/token.txt/x')).toEqual(denied(/cannot check \/runner-only\/token.txt: EACCES/));
    expect(asCli('/runner-only/nothing/x')).toEqual(denied(/cannot check \/runner-only\/nothing: EACCES/));
  });
  it("is the kernel's check for a process without capabilities: owner, else group, else others", () => {
    expect(maySearch({ mode: 0o700, uid: 10002, gid: 0 }, cli)).toBe(true);
    expect(maySearch({ mode: 0o070, uid: 10002, gid: 10001 }, cli)).toBe(false); // the owner's bits decide
    expect(maySearch({ mode: 0o710, uid: 10001, gid: 10001 }, cli)).toBe(true);
    expect(maySearch({ mode: 0o701, uid: 10001, gid: 10001 }, cli)).toBe(false); // the group's bits decide
    expect(maySearch({ mode: 0o701, uid: 0, gid: 0 }, cli)).toBe(true);
    expect(maySearch({ mode: 0o776, uid: 0, gid: 0 }, cli)).toBe(false);
  });
});
