import { addressAllowed, classifyAddress, classifyHost, type ErrorInfo, type Repository } from '@switchyard/protocol';

// What cloning a session's repository runs, decided without I/O (docs/DESIGN.md "Start from a
// repository"); clone.ts resolves the host, spawns git and reads the answer. git runs as the
// runner, outside the agent's sandbox, so everything it could be talked into is shut here: no
// configuration but ours, no hooks, no submodules, no protocol but http(s), no redirects, no
// prompts, no credentials from anywhere, and the host pinned to the address that was checked.

export const CLONE_ERROR_CODE = 'repository_clone_failed';

/** Where a repository's host may connect: the addresses checked for it, or why none may. */
export type HostDecision = { ok: true; resolve: string | undefined } | { ok: false; message: string };

/** The URL's host and the port git will connect to. */
export function hostAndPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  const port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return { host: u.hostname, port };
}

/**
 * Judges a host and what it resolved to. A literal address is judged as it is (no resolving). A
 * name is allowed only if every address it resolved to is; then git is pinned to those addresses
 * (`http.curloptResolve`), so a second lookup cannot answer differently (DNS rebinding).
 */
export function decideHost(url: string, resolved: readonly string[], allowLoopback: boolean): HostDecision {
  const { host, port } = hostAndPort(url);
  const literal = classifyHost(host);
  const refused = (what: string) => ({
    ok: false as const,
    message: `${what}; repositories are cloned only from public hosts`,
  });
  if (literal !== 'name' && host !== 'localhost' && !host.endsWith('.localhost')) {
    if (!addressAllowed(literal, allowLoopback)) return refused(`${host} is a ${describe(literal)} address`);
    return { ok: true, resolve: undefined };
  }
  if (resolved.length === 0) return { ok: false, message: `${host} did not resolve to any address` };
  for (const address of resolved) {
    const cls = classifyAddress(address) ?? 'private';
    if (!addressAllowed(cls, allowLoopback))
      return refused(`${host} resolves to ${address}, a ${describe(cls)} address`);
  }
  const pinned = resolved.map((a) => (a.includes(':') ? `[${a}]` : a)).join(',');
  return { ok: true, resolve: `${host}:${port}:${pinned}` };
}

function describe(cls: 'public' | 'loopback' | 'private'): string {
  return cls === 'loopback' ? 'loopback' : 'private, link-local or reserved';
}

/** Options every git command gets; nothing from system or user configuration is read (see cloneEnv). */
export function gitOptions(resolve: string | undefined): string[] {
  const c = [
    'core.hooksPath=/dev/null',
    'core.fsmonitor=false',
    // Links would be followed by nobody (the durable workspace keeps regular files only); as files
    // they survive a restore.
    'core.symlinks=false',
    'protocol.allow=never',
    'protocol.http.allow=always',
    'protocol.https.allow=always',
    // A redirect could send git to a host nobody checked.
    'http.followRedirects=false',
    'credential.helper=',
    'submodule.recurse=false',
    'fetch.recurseSubmodules=false',
    'transfer.fsckObjects=true',
    // One pack file rather than a loose file per object: fewer files in the durable workspace.
    'transfer.unpackLimit=1',
    'gc.auto=0',
    'maintenance.auto=false',
    'advice.detachedHead=false',
    'init.defaultBranch=main',
    // A server that stops sending fails the clone before the timeout does.
    'http.lowSpeedLimit=1',
    'http.lowSpeedTime=30',
    ...(resolve !== undefined ? [`http.curloptResolve=${resolve}`] : []),
  ];
  return c.flatMap((kv) => ['-c', kv]);
}

/**
 * The environment git runs with, built from nothing: no runner token, no provider key, no proxy
 * variables. HOME points nowhere, because libcurl would read `~/.netrc` credentials.
 */
export function cloneEnv(path: string | undefined): Record<string, string> {
  return {
    PATH: path ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: '/nonexistent',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: 'http:https',
    GIT_PROTOCOL_FROM_USER: '0',
  };
}

/**
 * The commands, in order, each run in the workspace: a shallow fetch of exactly the ref (branch,
 * tag or commit; the default branch when absent) and a checkout of what it fetched, so all three
 * kinds of ref work alike. The remote keeps the URL (it carries no credentials by contract).
 */
export function cloneSteps(repository: Repository, resolve: string | undefined): string[][] {
  const o = gitOptions(resolve);
  return [
    [...o, 'init', '--quiet', '--template='],
    ['config', 'core.symlinks', 'false'],
    // The URL as decideHost parsed it (the contract makes that the URL as given).
    ['remote', 'add', 'origin', new URL(repository.url).href],
    [
      ...o,
      'fetch',
      '--quiet',
      '--depth',
      '1',
      '--no-tags',
      '--no-recurse-submodules',
      'origin',
      repository.ref ?? 'HEAD',
    ],
    [...o, 'checkout', '--quiet', 'FETCH_HEAD'],
  ];
}

export const REV_PARSE_HEAD = ['rev-parse', '--verify', 'HEAD^{commit}'];

/** git's own words for why it failed: its last `fatal:`/`error:` line, or the last line. */
export function gitReason(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const fatal = lines.filter((l) => /^(fatal|error):/.test(l)).at(-1) ?? lines.at(-1) ?? 'no output';
  return fatal.replace(/^(fatal|error):\s*/, '').slice(0, 300);
}

/** The error a failed clone ends the start with: names the URL, the ref and why. */
export function cloneError(repository: Repository, reason: string): ErrorInfo {
  const ref = repository.ref === undefined ? 'its default branch' : `ref ${repository.ref}`;
  return {
    code: CLONE_ERROR_CODE,
    message: `cloning ${repository.url} (${ref}) failed: ${reason}`,
    retryable: true,
  };
}
