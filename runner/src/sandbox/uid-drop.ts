// The production wall's uid separation: in the container (SWITCHYARD_SANDBOX=container)
// the CLI runs under its own uid, so it cannot read the runner's or PID 1's
// /proc/<pid>/environ (the runner token, the provider key): reading another
// process's environ needs ptrace-read access, which a different uid without
// CAP_SYS_PTRACE is refused. Pure: a SpawnSpec in, the setpriv-wrapped
// SpawnSpec out (like bwrap.ts).
//
// The layout (runner/Dockerfile, DESIGN "Sandbox" → "Production uid separation"): tini is
// PID 1 as root; the entrypoint drops to the runner uid 10001 keeping only
// CAP_SETUID, CAP_SETGID (to start the CLI as 10002), CAP_KILL (to signal it)
// and CAP_DAC_OVERRIDE (to read the transcripts claude writes 0600) as
// ambient capabilities; the runner starts the CLI through setpriv as
// uid 10002 with the runner's group (the shared group: the workspace, the
// CLI's home and config dir are group-rw, umask 007), no supplementary
// groups, no capabilities (inheritable and ambient cleared, so the exec
// leaves the permitted set empty) and no_new_privs (no setuid binary or file
// capability can give any back).
import { readFile } from 'node:fs/promises';
import type { SpawnSpec } from '@switchyard/protocol';

/** The CLI's uid in the container; the runner is 10001. */
export const CLI_UID = 10002;

export interface UidDrop {
  /** Absolute path of util-linux setpriv. */
  setpriv: string;
  uid: number;
  /** The group shared with the runner (the runner's own gid). */
  gid: number;
}

export function wrapWithUidDrop(spec: SpawnSpec, drop: UidDrop): SpawnSpec {
  const args = [
    '--reuid',
    String(drop.uid),
    '--regid',
    String(drop.gid),
    '--clear-groups',
    '--inh-caps',
    '-all',
    '--ambient-caps',
    '-all',
    '--no-new-privs',
    '--',
    spec.command,
    ...spec.args,
  ];
  return { ...spec, command: drop.setpriv, args, env: { ...spec.env, ...GIT_TRUSTS_THE_RUNNER } };
}

/**
 * git refuses a repository another uid owns ("dubious ownership"), and the workspace and a cloned
 * `.git` belong to the runner's uid (docs/DESIGN.md "Start from a repository"). The only other uid
 * in the container is the runner's, so the CLI's git may trust every directory; given as
 * command-scope configuration (git 2.31+), the one scope besides system and global that
 * `safe.directory` is read from.
 */
const GIT_TRUSTS_THE_RUNNER = {
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'safe.directory',
  GIT_CONFIG_VALUE_0: '*',
};

/** Capability numbers the runner needs in its effective set to start, stop and read after the CLI as another uid. */
const RUNNER_CAPS = { CAP_DAC_OVERRIDE: 1, CAP_KILL: 5, CAP_SETGID: 6, CAP_SETUID: 7 } as const;

/** The names of RUNNER_CAPS missing from this process's effective set (Linux /proc/self/status). */
export async function missingRunnerCaps(status?: string): Promise<string[]> {
  const text = status ?? (await readFile('/proc/self/status', 'utf8').catch(() => ''));
  const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(text)?.[1];
  const eff = hex === undefined ? 0n : BigInt(`0x${hex}`);
  return Object.entries(RUNNER_CAPS)
    .filter(([, bit]) => (eff & (1n << BigInt(bit))) === 0n)
    .map(([name]) => name);
}
