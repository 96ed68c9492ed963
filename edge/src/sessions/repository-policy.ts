// The deployment's half of the repository host rule (docs/DESIGN.md "Start from a repository"):
// whether loopback hosts may be cloned. Only the local stack sets REPOSITORY_ALLOW_LOOPBACK; the
// same switch reaches the runner in its launch environment, so both sides judge alike.

/** True only for `REPOSITORY_ALLOW_LOOPBACK=1`. */
export function repositoryAllowLoopback(env: Pick<Env, 'REPOSITORY_ALLOW_LOOPBACK'>): boolean {
  return env.REPOSITORY_ALLOW_LOOPBACK === '1';
}
