// The guard's decisions: one tool call in, allow or deny-with-reason out.
// Pure given an FsView (resolve.ts); the same code decides in the runner for
// claude's hooks and in pi's extension. Anything unexpected denies: decide()
// never throws.
//
// What it checks, in order:
//  1. the tool is on the session's allow-list;
//  2. no string anywhere in the input is a file: URL;
//  3. URL arguments are http(s) to a public host;
//  4. path arguments resolve (symlinks followed, `..` after them, nearest
//     existing ancestor for new files) inside the workspace, and hit no
//     sensitive pattern; every way the CLI might read the string is checked;
//  5. glob arguments stay relative, never climb (`..`) and name nothing sensitive.
// Shell commands are not parsed: no guard can read arbitrary shell reliably.
// The OS wall (bubblewrap / the container) is what bounds the shell.
import { posix } from 'node:path';
import type { GuardPolicy } from './policy.ts';
import { resolveReal, type FsView } from './resolve.ts';
import { PROC_REASON, sensitiveMatch } from './sensitive-paths.ts';

export type Decision = { allow: true } | { allow: false; reason: string };

export interface ToolCall {
  tool: string;
  input: unknown;
  /** The working directory the CLI reports for this call (claude hook `cwd`, pi `ctx.cwd`). */
  cwd?: string | undefined;
}

/** Every denial starts with this, so tests and the probe can tell the guard's refusal from any other error. */
export const DENY_PREFIX = 'switchyard guard:';

/** Keys whose string value is a file or directory path. */
const PATH_KEYS = ['file_path', 'path', 'notebook_path', 'filePath', 'dir', 'directory', 'dir_path', 'cwd'];
/** Keys whose string value is a URL. */
const URL_KEYS = ['url', 'uri', 'href'];
/** Tools whose `pattern` is a file glob (Grep's `pattern` is a regex, its `glob` is a glob). */
const GLOB_PATTERN_TOOLS = ['Glob', 'find'];

const deny = (reason: string): Decision => ({ allow: false, reason: `${DENY_PREFIX} ${reason}` });
const ALLOW: Decision = { allow: true };

export function decide(call: ToolCall, policy: GuardPolicy, fs: FsView): Decision {
  try {
    return decideUnsafe(call, policy, fs);
  } catch (err) {
    return deny(`internal error, refusing the call (${err instanceof Error ? err.message : String(err)})`);
  }
}

function decideUnsafe(call: ToolCall, policy: GuardPolicy, fs: FsView): Decision {
  if (typeof call.tool !== 'string' || !policy.tools.includes(call.tool)) {
    return deny(`tool ${JSON.stringify(call.tool)} is not on this session's allow-list (${policy.tools.join(', ')})`);
  }
  const input = call.input ?? {};
  if (typeof input !== 'object' || Array.isArray(input)) return deny(`${call.tool}: input is not an object`);
  const fileUrl = findFileUrl(input, 0);
  if (fileUrl === TOO_DEEP) return deny(`${call.tool}: input is nested too deeply to check`);
  if (fileUrl !== undefined) return deny(`${call.tool}: file: URLs are not allowed (${clip(fileUrl)})`);

  const ws = resolveReal(policy.workspace, fs);
  if (!ws.ok || !ws.exists) return deny(`the session workspace ${policy.workspace} cannot be resolved`);
  const bases = [...new Set([ws.path, policy.workspace, ...(call.cwd ? [call.cwd] : [])])];

  const fields = input as Record<string, unknown>;
  for (const key of URL_KEYS) {
    if (!(key in fields) || fields[key] === undefined || fields[key] === null) continue;
    const d = checkUrl(call.tool, key, fields[key]);
    if (!d.allow) return d;
  }
  for (const key of PATH_KEYS) {
    if (!(key in fields) || fields[key] === undefined || fields[key] === null) continue;
    const d = checkPath(call.tool, key, fields[key], ws.path, bases, fs);
    if (!d.allow) return d;
  }
  const globs: Array<[string, unknown]> = [];
  if ('glob' in fields && fields.glob !== undefined && fields.glob !== null) globs.push(['glob', fields.glob]);
  if (GLOB_PATTERN_TOOLS.includes(call.tool) && 'pattern' in fields) globs.push(['pattern', fields.pattern]);
  for (const [key, value] of globs) {
    const d = checkGlob(call.tool, key, value);
    if (!d.allow) return d;
  }
  return ALLOW;
}

// ---------------------------------------------------------------------------
// Paths

/**
 * Every absolute path the CLI might turn this string into: as given and with
 * pi's rewrites (a leading `@` dropped, Unicode spaces made plain), joined to
 * each base the tool might use, both as the kernel reads it (no lexical `..`)
 * and as Node's path.resolve() normalises it, plus the look-alike variants pi
 * tries when a file does not exist (macOS screenshot names, NFD, curly quotes).
 * The call is allowed only if all of them are.
 */
export function pathCandidates(p: string, bases: readonly string[]): string[] {
  const forms = new Set<string>([p]);
  const noAt = p.startsWith('@') ? p.slice(1) : p;
  forms.add(noAt);
  forms.add(noAt.replace(UNICODE_SPACES, ' '));
  const absolute = new Set<string>();
  for (const f of forms) {
    const s = f === '' ? '.' : f;
    if (s.startsWith('/')) {
      absolute.add(s);
      absolute.add(posix.resolve(s));
    } else {
      for (const b of bases) {
        absolute.add(`${b}/${s}`);
        absolute.add(posix.resolve(b, s));
      }
    }
  }
  const all = new Set<string>();
  for (const a of absolute) {
    const nfd = a.normalize('NFD');
    for (const v of [
      a,
      a.replace(/ (AM|PM)\./gi, '\u202F$1.'),
      nfd,
      a.replace(/'/g, '\u2019'),
      nfd.replace(/'/g, '\u2019'),
    ])
      all.add(v);
  }
  return [...all];
}

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;

function checkPath(
  tool: string,
  key: string,
  value: unknown,
  ws: string,
  bases: readonly string[],
  fs: FsView,
): Decision {
  if (typeof value !== 'string') return deny(`${tool}: ${key} is not a string`);
  if (value.includes('\0')) return deny(`${tool}: ${key} contains a NUL byte`);
  const expanded = (value.startsWith('@') ? value.slice(1) : value).replace(UNICODE_SPACES, ' ');
  if (value.startsWith('~') || expanded.startsWith('~'))
    return deny(`${tool}: ${clip(value)} is relative to a home directory, outside the session workspace`);
  const hit = sensitiveMatch(relativeSegments(value, ws));
  if (hit) return deny(`${tool}: ${clip(value)} is a sensitive path (${hit.name}): ${hit.reason}`);
  for (const candidate of pathCandidates(value, bases)) {
    const r = resolveReal(candidate, fs);
    if (!r.ok)
      return deny(
        r.proc ? `${tool}: ${clip(value)}: ${PROC_REASON}` : `${tool}: ${clip(value)} cannot be checked (${r.reason})`,
      );
    if (!inside(r.path, ws))
      return deny(`${tool}: ${clip(value)} resolves to ${clip(r.path)}, outside the session workspace ${ws}`);
    const s = sensitiveMatch(relativeSegments(r.path, ws));
    if (s) return deny(`${tool}: ${clip(value)} resolves to a sensitive path (${s.name}): ${s.reason}`);
  }
  return ALLOW;
}

function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root === '/' ? '/' : `${root}/`);
}

/** Segments of a path, relative to the workspace when it lies under it (the workspace's own ancestors never count). */
function relativeSegments(path: string, ws: string): string[] {
  const rest = inside(path, ws) ? path.slice(ws.length) : path;
  return rest.split('/').filter((s) => s !== '' && s !== '.');
}

// ---------------------------------------------------------------------------
// Globs

function checkGlob(tool: string, key: string, value: unknown): Decision {
  if (typeof value !== 'string') return deny(`${tool}: ${key} is not a string`);
  if (value.startsWith('/') || value.startsWith('~'))
    return deny(`${tool}: ${key} ${clip(value)} is absolute; globs must stay relative to the workspace`);
  if (value.includes('..')) return deny(`${tool}: ${key} ${clip(value)} climbs out with '..'`);
  const hit = sensitiveMatch(value.split(/[/{},]/).filter((s) => s !== ''));
  if (hit) return deny(`${tool}: ${key} ${clip(value)} names a sensitive path (${hit.name}): ${hit.reason}`);
  return ALLOW;
}

// ---------------------------------------------------------------------------
// URLs

function checkUrl(tool: string, key: string, value: unknown): Decision {
  if (typeof value !== 'string') return deny(`${tool}: ${key} is not a string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return deny(`${tool}: ${key} ${clip(value)} is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return deny(`${tool}: ${key} uses ${url.protocol}; only http: and https: URLs are allowed`);
  const internal = internalHost(url.hostname);
  if (internal) return deny(`${tool}: ${key} ${clip(value)} points at ${internal}`);
  return ALLOW;
}

/** Loopback, link-local (cloud metadata), private and unspecified addresses: the runner's proxy, the host, the VPC. */
export function internalHost(hostname: string): string | undefined {
  const h = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return 'a loopback host';
  if (h === 'metadata.google.internal' || h.endsWith('.internal')) return 'an internal host name';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)?.[1];
  const v4 = mapped ?? (/^\d+\.\d+\.\d+\.\d+$/.test(h) ? h : undefined);
  if (v4 !== undefined) {
    const [a = 0, b = 0] = v4.split('.').map(Number);
    if (a === 127) return 'a loopback address';
    if (a === 0) return 'an unspecified address';
    if (a === 169 && b === 254) return 'a link-local (cloud metadata) address';
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127))
      return 'a private network address';
    return undefined;
  }
  if (h.includes(':')) {
    if (h === '::1' || h === '::') return 'a loopback address';
    if (/^fe[89ab]/.test(h)) return 'a link-local address';
    if (/^f[cd]/.test(h)) return 'a private network address';
    if (h.startsWith('::ffff:')) return 'an IPv4-mapped address';
  }
  return undefined;
}

// ---------------------------------------------------------------------------

const TOO_DEEP = Symbol('too deep');

function findFileUrl(value: unknown, depth: number): string | typeof TOO_DEEP | undefined {
  if (depth > 64) return TOO_DEEP;
  if (typeof value === 'string') return /^\s*file:/i.test(value) ? value : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const v of Array.isArray(value) ? value : Object.values(value)) {
    const hit = findFileUrl(v, depth + 1);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

function clip(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
