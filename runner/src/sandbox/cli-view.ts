// The filesystem as the CLI sees it, for the guard's decisions made in the runner (claude's hooks,
// answered over its control protocol). Under bubblewrap the CLI has a mount namespace of its own:
// a private /tmp, only the bound parts of the host, so a link the agent made in its /tmp resolves
// there and nowhere on the host. The runner reads that view through /proc/<pid>/root of the
// namespace's first process, bubblewrap's only child (the runner owns the user namespace, so the
// kernel lets it). In the container and without a wall the CLI shares the runner's mount
// namespace, and the runner's own view is the CLI's.
import { readFileSync } from 'node:fs';
import { nodeFs, rootedFs, type FsView } from './guard/resolve.ts';
import type { SandboxMode } from './sandbox.ts';

/**
 * `cliPid` is the process the runner spawned: bubblewrap itself, under the bubblewrap wall. A view
 * that cannot be found throws at its first use, which the guard turns into a refusal.
 */
export function cliFsView(mode: SandboxMode, cliPid: number): FsView {
  if (mode !== 'bubblewrap') return nodeFs();
  let view: FsView | undefined;
  const inside = () => (view ??= rootedFs(`/proc/${sandboxInit(cliPid)}/root`));
  return { lstat: (path) => inside().lstat(path), readlink: (path) => inside().readlink(path) };
}

/** bubblewrap's child: the first process of the CLI's namespaces, alive as long as the CLI is. */
function sandboxInit(bwrapPid: number): number {
  const children = readFileSync(`/proc/${bwrapPid}/task/${bwrapPid}/children`, 'utf8').trim().split(/\s+/);
  const [child] = children;
  if (children.length !== 1 || child === undefined || !/^\d+$/.test(child))
    throw new Error(`cannot find the sandbox of process ${bwrapPid} (children: ${children.join(' ') || 'none'})`);
  return Number(child);
}
