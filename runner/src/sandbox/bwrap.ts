// The local OS wall: run the CLI under bubblewrap. Pure: a SpawnSpec and a
// description of the host in, the wrapped SpawnSpec out (hostLayout() in
// sandbox.ts reads the host). The layout mirrors the production container
// (runner/Dockerfile): the system read-only, the workspace, a private home and
// the CLI's config dir writable, a private /tmp, nothing else.
//
// Built by allow-list, not by hiding: the new root is empty and only what is
// bound appears, so other sessions' workspaces, the host's home, /run (docker
// and systemd sockets), /var, /opt, /mnt and the checkout itself simply do not
// exist inside. /proc is a fresh procfs of a new PID namespace: the runner and
// every other host process are invisible, so /proc/<runner>/environ cannot be
// named. All capabilities are dropped (as root, bwrap would otherwise keep
// CAP_SYS_ADMIN and the CLI could remount / read-write).
//
// The network namespace is the CLI's own (`--unshare-net`): a loopback interface and no route,
// so no service on the host's loopback (the dev edge, the runner host, the offline model, other
// sessions) can be reached. The model is reached through the runner's credential proxy on a
// unix socket bound in at MODEL_SOCKET, relayed from MODEL_URL by socat (MODEL_ROUTE_SCRIPT).
import type { SpawnSpec } from '@switchyard/protocol';

/** Where the credential proxy's unix socket appears inside the sandbox. */
export const MODEL_SOCKET = '/run/switchyard/model.sock';
/** The port the model route listens on inside the sandbox; any port works in a namespace of one's own. */
export const MODEL_PORT = 4480;
/** The model URL a sandboxed CLI is given. */
export const MODEL_URL = `http://127.0.0.1:${MODEL_PORT}`;

/** MODEL_PORT's listening socket as /proc/net/tcp shows it: 127.0.0.1:port in hex, state LISTEN. */
const MODEL_LISTENING = `0100007F:${MODEL_PORT.toString(16).toUpperCase().padStart(4, '0')} 0A`;

/**
 * The sandbox's first process when the CLI has a model route, run by /bin/sh as
 * `sh -c MODEL_ROUTE_SCRIPT sh <setpriv> <socat> <command> [args...]`. It starts socat listening on
 * the namespace's MODEL_URL and relaying each connection to MODEL_SOCKET, waits until the listening
 * socket shows in /proc/net/tcp (so the CLI's first model call cannot race it; read by the shell
 * itself, no process per look), then becomes the CLI, bubblewrap's direct child as without a route.
 * socat: ~10 ms to start and ~5 MiB per session (a Node relay was ~110 ms and ~47 MiB). Its errors
 * go to the CLI's stderr; its stdin and stdout are not the CLI's pipes. `nodelay`: with Nagle on, a
 * write that follows one the CLI has not ACKed yet waits for the ACK, which a client delays by ~40 ms
 * on a reused connection (docs/DESIGN.md "The agent leaving the local sandbox through loopback
 * services", Cost). socat is started through setpriv with a parent-death signal: its parent is the
 * shell that becomes the CLI, so it dies with the CLI. Otherwise it outlived a CLI whose runner was
 * killed while bubblewrap was still setting up, and bubblewrap's init waited on it for good.
 */
export const MODEL_ROUTE_SCRIPT = [
  `"$1" --pdeathsig KILL -- "$2" TCP-LISTEN:${MODEL_PORT},bind=127.0.0.1,fork,nodelay UNIX-CONNECT:${MODEL_SOCKET} </dev/null >/dev/null &`,
  'relay=$!',
  'shift 2',
  'listening() {',
  '  while read -r _ addr _ state _; do',
  `    [ "$addr $state" = "${MODEL_LISTENING}" ] && return 0`,
  '  done </proc/net/tcp',
  '  return 1',
  '}',
  'until listening; do',
  `  kill -0 "$relay" 2>/dev/null || { echo "switchyard: the model route (socat) did not start" >&2; exit 1; }`,
  'done',
  'exec "$@"',
].join('\n');

/** What one system path is on this host. A symlink's `resolved` is its host realpath (absent when dangling). */
export type HostEntry =
  | { kind: 'dir' }
  | { kind: 'file' }
  | { kind: 'symlink'; target: string; resolved?: string }
  | { kind: 'missing' };

export interface BwrapLayout {
  /** Absolute path of the bwrap binary. */
  bwrap: string;
  /** The caller's uid: non-root needs a user namespace. */
  uid: number;
  /** Read-write binds: the workspace, the private home, the CLI config dir. */
  writable: string[];
  /** Read-only binds: the CLI and node installation, the guard module. */
  readOnly: string[];
  /** Files bound read-only over themselves after the writable binds (the spec's config files: hook settings, models.json). */
  readOnlyFiles: string[];
  /** Top-level system paths (/usr, /bin, /lib, ...) and what they are on this host. */
  system: Record<string, HostEntry>;
  /** The /etc entries to expose (ETC_ALLOW), by path, and what each is on this host. */
  etc: Record<string, HostEntry>;
  /**
   * The model route: the credential proxy's unix socket on the host, the socat that relays
   * MODEL_URL to it and the setpriv that ties socat's life to the CLI's (both bound read-only).
   * Absent: no network at all.
   */
  model?: { socket: string; socat: string; setpriv: string };
}

/** System directories the CLIs and their shell tools need. /usr carries almost everything; the rest are usually symlinks into it. */
export const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * /etc by allow-list: name resolution, users (for `id`, os.userInfo()), TLS
 * roots, time zone, the dynamic linker, Debian's alternatives symlinks, shell
 * start-up. Never shadow, gshadow, ssh host keys, npmrc/pip.conf, sudoers.
 */
export const ETC_ALLOW = [
  'passwd',
  'group',
  'hosts',
  'hostname',
  'resolv.conf',
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'localtime',
  'timezone',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'os-release',
  'debian_version',
  'mime.types',
  'magic',
  'magic.mime',
  'terminfo',
  'inputrc',
  'bash.bashrc',
  'profile',
  'locale.alias',
];

export function wrapWithBwrap(spec: SpawnSpec, layout: BwrapLayout): SpawnSpec {
  const a: string[] = [];
  if (layout.uid !== 0) a.push('--unshare-user');
  a.push(
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'switchyard',
    '--die-with-parent',
    // setsid(): no controlling terminal, so no TIOCSTI keystroke injection into the runner's.
    '--new-session',
    '--cap-drop',
    'ALL',
  );
  for (const path of SYSTEM_PATHS) {
    const e = layout.system[path] ?? { kind: 'missing' };
    if (e.kind === 'symlink') a.push('--symlink', e.target, path);
    else if (e.kind === 'dir') a.push('--ro-bind', path, path);
  }
  const boundDirs = Object.keys(layout.system).filter((p) => layout.system[p]?.kind === 'dir');
  for (const [path, e] of Object.entries(layout.etc)) {
    if (e.kind === 'missing') continue;
    // A symlink into the bound system stays a symlink (to its realpath, so it resolves inside
    // exactly as outside): a bind would make it a plain file, and Node's ICU, finding
    // /etc/localtime no symlink, works out the time zone by reading every file under
    // /usr/share/zoneinfo (~10 ms of every Node process that uses local time). Anything else is
    // bound read-only.
    if (e.kind === 'symlink' && e.resolved !== undefined && boundDirs.some((d) => e.resolved?.startsWith(`${d}/`)))
      a.push('--symlink', e.resolved, path);
    else a.push('--ro-bind-try', path, path);
  }
  a.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--dir', '/var/tmp');
  for (const path of dedupeNested(layout.readOnly)) a.push('--ro-bind', path, path);
  for (const path of layout.writable) a.push('--bind', path, path);
  for (const path of layout.readOnlyFiles) a.push('--ro-bind', path, path);
  const m = layout.model;
  if (m)
    a.push(
      ...['--ro-bind', m.socat, m.socat, '--ro-bind', m.setpriv, m.setpriv],
      ...['--dir', '/run/switchyard', '--bind', m.socket, MODEL_SOCKET],
    );
  a.push('--chdir', spec.cwd, '--');
  if (m) a.push('/bin/sh', '-c', MODEL_ROUTE_SCRIPT, 'sh', m.setpriv, m.socat);
  a.push(spec.command, ...spec.args);
  return { ...spec, command: layout.bwrap, args: a };
}

/** Drops paths already covered by another path in the list. */
function dedupeNested(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort((x, y) => x.length - y.length);
  const out: string[] = [];
  for (const p of sorted) if (!out.some((q) => p === q || p.startsWith(`${q}/`))) out.push(p);
  return out;
}
