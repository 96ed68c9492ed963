// The runner container's runtime contract, shared by the CDK stack (what ECS is told) and the
// image test that runs the built image under bubblewrap (test/image/): both read these, so the
// image is proven with exactly the capabilities, volumes and limits the task definition gives.

/** Docker's (and Fargate's) default capability set for a container's root. */
export const DEFAULT_CAPS = [
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'NET_RAW',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
] as const;

/**
 * What the runner keeps (runner/Dockerfile's entrypoint passes exactly these to setpriv as
 * ambient capabilities): SETUID/SETGID to start the CLI as uid 10002, KILL to stop it,
 * DAC_OVERRIDE to read the transcripts claude writes 0600. Fargate can add no capability
 * but SYS_PTRACE, so the task definition keeps these by dropping every other default one.
 */
export const KEPT_CAPS = ['DAC_OVERRIDE', 'KILL', 'SETGID', 'SETUID'] as const;

export const DROPPED_CAPS = DEFAULT_CAPS.filter((c) => !(KEPT_CAPS as readonly string[]).includes(c));

/** The image's VOLUMEs: the only writable paths under a read-only root. */
export const VOLUMES = [
  { name: 'workspace', containerPath: '/workspace' },
  { name: 'home', containerPath: '/home/switchyard' },
  { name: 'tmp', containerPath: '/tmp' },
] as const;

export const CONTAINER_NAME = 'runner';

/**
 * Fargate size. Measured (README "Speed" → "End to end" (3), docs/MEASUREMENTS.md): one
 * session's runner + CLI is 232–314 MiB RSS at rest. 1 GiB leaves room for what the agent's
 * tools start (git, rg, a build or test run) without an OOM kill; 0.5 vCPU because start-up is
 * CPU-bound (Node loading the runner and the CLI: ~0.9–1.2 s on a full core), which 0.25 vCPU
 * would quadruple.
 */
export const TASK_CPU_UNITS = 512;
export const TASK_MEMORY_MIB = 1024;

/**
 * SIGTERM → SIGKILL grace. The runner's graceful stop is bounded by SWITCHYARD_SHUTDOWN_DEADLINE
 * (25 s) plus 2 s for delivery (docs/DESIGN.md "Runner behaviour"); 45 s leaves margin for a
 * loaded task without holding a stopped session's task for long (Fargate allows up to 120 s).
 */
export const STOP_TIMEOUT_SECONDS = 45;
export const RUNNER_SHUTDOWN_BOUND_SECONDS = 25 + 2;
