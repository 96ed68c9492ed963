// The filesystem as the CLI sees it, for the guard's decisions made in the runner (claude's hooks,
// answered over its control protocol). Under bubblewrap the CLI has a mount namespace of its own:
// a private /tmp, only the bound parts of the host, so a link the agent made in its /tmp resolves
// there and nowhere on the host. The runner reads that view through /proc/<pid>/root of the
// namespace's first process, bubblewrap's only child (the runner owns the user namespace, so the
// kernel lets it). Without a wall the CLI shares the runner's mount namespace and uid, and the
// runner's own view is the CLI's. In the container the CLI shares the mount namespace but not the
// rights: the runner reads through any directory (CAP_DAC_OVERRIDE), the CLI only through those
// its uid may search, so the runner looks only where the CLI could (searchableBy).
import { readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { nodeFs, rootedFs, type FsView } from './guard/resolve.ts';
import type { SandboxMode } from './sandbox.ts';

/** Who the CLI runs as in the container: its own uid, the runner's group, no other groups. */
export interface CliCredentials {
  uid: number;
  gid: number;
}

/**
 * `cliPid` is the process the runner spawned: bubblewrap itself, under the bubblewrap wall. A view
 * that cannot be found throws at its first use, which the guard turns into a refusal.
 */
export function cliFsView(mode: SandboxMode, cliPid: number, cli: CliCredentials): FsView {
  if (mode === 'container') return searchableBy(nodeFs(), cli, statSync);
  if (mode !== 'bubblewrap') return nodeFs();
  let view: FsView | undefined;
  const inside = () => (view ??= rootedFs(`/proc/${sandboxInit(cliPid)}/root`));
  return { lstat: (path) => inside().lstat(path), readlink: (path) => inside().readlink(path) };
}

/** What a directory's permission check reads. */
export interface DirOwner {
  mode: number;
  uid: number;
  gid: number;
}

/**
 * `view` as a process of `cli` would see it: looking at an entry needs search permission on its
 * directory, or it fails with EACCES as the kernel would fail the CLI. Otherwise a deny reason
 * would name where a link in a directory closed to the CLI points, and whether something exists
 * there. resolveReal hands lstat and readlink only paths whose directory it resolved to a real
 * directory, so that directory is the one to check. Mode bits only: an ACL that would open a
 * directory to the CLI is not read, so such a path is refused as unreadable (fails closed).
 */
export function searchableBy(view: FsView, cli: CliCredentials, stat: (path: string) => DirOwner): FsView {
  const check = (path: string) => {
    const dir = dirname(path);
    if (!maySearch(stat(dir), cli))
      throw Object.assign(new Error(`EACCES: permission denied, lstat '${path}'`), { code: 'EACCES' });
  };
  return {
    lstat(path) {
      check(path);
      return view.lstat(path);
    },
    readlink(path) {
      check(path);
      return view.readlink(path);
    },
  };
}

/** The kernel's check for a process without capabilities: the owner's bits, else the group's, else the others'. */
export function maySearch(dir: DirOwner, cli: CliCredentials): boolean {
  if (dir.uid === cli.uid) return (dir.mode & 0o100) !== 0;
  if (dir.gid === cli.gid) return (dir.mode & 0o010) !== 0;
  return (dir.mode & 0o001) !== 0;
}

/** bubblewrap's child: the first process of the CLI's namespaces, alive as long as the CLI is. */
function sandboxInit(bwrapPid: number): number {
  const children = readFileSync(`/proc/${bwrapPid}/task/${bwrapPid}/children`, 'utf8').trim().split(/\s+/);
  const [child] = children;
  if (children.length !== 1 || child === undefined || !/^\d+$/.test(child))
    throw new Error(`cannot find the sandbox of process ${bwrapPid} (children: ${children.join(' ') || 'none'})`);
  return Number(child);
}
