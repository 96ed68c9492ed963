// The built runner image (runner/Dockerfile via scripts/image/build.sh), run the way the ECS task
// definition in infra/ runs it: its root filesystem (`buildah mount`) read-only under bubblewrap,
// PID 1 in its own PID namespace, only the image's VOLUMEs writable (fresh copies of the image's
// content, as ECS seeds task volumes), Fargate's default capability set minus what the task
// definition drops (imported from infra/src/runner-container.ts, so the two cannot drift), and the
// image's environment plus what a caller adds. No network namespace: loopback peers (the offline
// model, a test hub) are reachable. Used by test/image and bench/image. Needs root, bubblewrap,
// buildah and mmdebstrap (the build script installs the last two).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '@switchyard/protocol';
import { type CliExecutable, locateCli } from '@switchyard/runner/cli';
import { DEFAULT_CAPS, DROPPED_CAPS, VOLUMES } from '../../infra/src/runner-container.ts';

export const REPO = realpathSync(fileURLToPath(new URL('../..', import.meta.url)));

/** The group the CLI's uid shares with the runner's in the image (runner/Dockerfile). */
export const CLI_GID = 10001;

/** Where a file of this checkout is in the image, whose /app is this checkout's tree. */
export const inImage = (hostPath: string): string => join('/app', relative(REPO, hostPath));

/**
 * The CLI as the image has it: where locateCli finds it here, under /app (the image's `npm ci`
 * lays out node_modules as this checkout's install does, from the same lockfile). pi is a Node
 * script run by the runner's own Node: the image's.
 */
export function cliInImage(backend: Backend): CliExecutable {
  const host = locateCli(backend);
  return backend === 'pi'
    ? { ...host, command: '/usr/local/bin/node', prefixArgs: host.prefixArgs.map(inImage) }
    : { ...host, command: inImage(host.command) };
}

export interface ImageConfig {
  Env: string[];
  Entrypoint: string[];
  Cmd: string[];
  WorkingDir: string;
  User?: string;
  Volumes: Record<string, object>;
}

/** One task's writable volumes: their host directories and the bubblewrap binds that mount them. */
export interface TaskVolumes {
  /** Host directory of the volume mounted at `containerPath`. */
  hostPath(containerPath: string): string;
  readonly bindArgs: string[];
  remove(): void;
}

export interface BuiltImage {
  readonly image: string;
  readonly config: ImageConfig;
  /** The image's environment (its `Env`), by name. */
  readonly env: Record<string, string>;
  readonly rootfs: string;
  buildah(...args: string[]): string;
  /** Fresh copies of the image's VOLUMEs for one task. */
  taskVolumes(): TaskVolumes;
  /**
   * bubblewrap's arguments for one task: `command` after the image's ENTRYPOINT (an ECS command
   * override), or instead of it with `entrypoint: false`; `env` added to the image's; `cwd` instead
   * of the image's WORKDIR.
   */
  bwrapArgs(
    volumes: TaskVolumes,
    command: string[],
    opts?: { env?: Record<string, string>; entrypoint?: boolean; cwd?: string },
  ): string[];
  close(): void;
}

const KEPT_CAPS = DEFAULT_CAPS.filter((c) => !(DROPPED_CAPS as readonly string[]).includes(c));

/** Builds the image (cached: a no-op when nothing it copies changed) and mounts its root filesystem. */
export function openImage(): BuiltImage {
  const scratch = mkdtempSync(join(tmpdir(), 'sy-image-'));
  const containersConf = join(scratch, 'containers.conf');
  execFileSync('sh', ['-c', `printf '[containers]\\ndefault_ulimits = []\\n' > '${containersConf}'`]);
  const buildahEnv = { ...process.env, CONTAINERS_CONF: containersConf };
  const buildah = (...args: string[]) => execFileSync('buildah', args, { env: buildahEnv, encoding: 'utf8' }).trim();
  const out = execFileSync('bash', [join(REPO, 'scripts/image/build.sh')], {
    cwd: REPO,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const image = out.trim().split('\n').at(-1) ?? '';
  const config = (JSON.parse(buildah('inspect', '--type', 'image', image)) as { OCIv1: { config: ImageConfig } }).OCIv1
    .config;
  const env = Object.fromEntries(config.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const container = buildah('from', '--pull-never', image);
  const rootfs = buildah('mount', container);

  const taskVolumes = (): TaskVolumes => {
    const dir = mkdtempSync(join(scratch, 'task-'));
    const hostPaths = new Map<string, string>();
    const bindArgs = VOLUMES.flatMap((v) => {
      const host = join(dir, v.name);
      const seed = join(rootfs, v.containerPath);
      cpSync(seed, host, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      execFileSync('chown', ['--reference', seed, host]);
      execFileSync('chmod', ['--reference', seed, host]);
      hostPaths.set(v.containerPath, host);
      return ['--bind', host, v.containerPath];
    });
    return {
      hostPath: (containerPath) => {
        const host = hostPaths.get(containerPath);
        if (host === undefined) throw new Error(`${containerPath} is not one of the image's volumes`);
        return host;
      },
      bindArgs,
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  };

  const bwrapArgs: BuiltImage['bwrapArgs'] = (volumes, command, opts = {}) => [
    '--ro-bind',
    rootfs,
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...volumes.bindArgs,
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--as-pid-1',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    ...KEPT_CAPS.flatMap((c) => ['--cap-add', `CAP_${c}`]),
    '--chdir',
    opts.cwd ?? config.WorkingDir,
    '--clearenv',
    ...Object.entries({ ...env, ...opts.env }).flatMap(([name, value]) => ['--setenv', name, value]),
    ...(opts.entrypoint === false ? [] : config.Entrypoint),
    ...command,
  ];

  return {
    image,
    config,
    env,
    rootfs,
    buildah,
    taskVolumes,
    bwrapArgs,
    close: () => {
      buildah('umount', container);
      buildah('rm', container);
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
