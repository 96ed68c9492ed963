import {
  callerArnFromResponse,
  ecsTaskId,
  identityRequest,
  proofSignsRunnerId,
  stsErrorCode,
  taskCallerArn,
  type ErrorInfo,
  type IdentityEndpoint,
  type RunnerIdentityProof,
} from '@switchyard/protocol';

// The edge's half of runner identity (docs/DESIGN.md "Runner identity"): a runner's hello carries
// the signature of an STS GetCallerIdentity request; the edge sends that request to STS itself
// and accepts the runner only if STS answers with the ARN ECS gives the launched task's role
// session, `assumed-role/<task role>/<task id>`. The edge never judges the signature: STS does.

export interface TaskIdentityConfig {
  /** The STS endpoint the edge calls and its signing region; the runner signs for it (launch env). */
  sts: IdentityEndpoint;
  /** The runner task definition's task role (only ECS may assume it, DESIGN "Deploy decisions"). */
  taskRoleArn: string;
}

export type IdentityVerdict = { ok: true } | { ok: false; error: ErrorInfo };

const refused = (message: string): IdentityVerdict => ({
  ok: false,
  error: { code: 'runner_identity_refused', message, retryable: false },
});

/** How long STS may take before the hello is answered "try again". */
const STS_TIMEOUT_MS = 10_000;

/** Whether the runner that sent `proof` as `runnerId` is the ECS task `ref` refers to. */
export async function verifyTaskIdentity(
  config: TaskIdentityConfig,
  ref: string,
  runnerId: string,
  proof: RunnerIdentityProof | undefined,
  doFetch: typeof fetch = fetch,
): Promise<IdentityVerdict> {
  if (proof === undefined) return refused('this launch needs a proof of the runner’s task identity');
  // Unsigned, the header would bind the proof to nothing: every proof of that task would do.
  if (!proofSignsRunnerId(proof)) return refused('the identity proof does not sign the runner id and host');
  const expected = taskCallerArn(config.taskRoleArn, ecsTaskId(ref));
  if (expected === null) {
    return {
      ok: false,
      error: { code: 'config_invalid', message: 'RUNNER_TASK_ROLE_ARN is not an IAM role ARN', retryable: false },
    };
  }
  const r = identityRequest(config.sts.url, runnerId, proof);
  // fetch sets Host from the URL, the host that was signed; runtimes differ on a Host given by hand.
  const headers = Object.fromEntries(Object.entries(r.headers).filter(([name]) => name !== 'host'));
  let status: number;
  let text: string;
  try {
    const res = await doFetch(r.url, {
      method: r.method,
      headers,
      body: r.body,
      signal: AbortSignal.timeout(STS_TIMEOUT_MS),
    });
    status = res.status;
    text = (await res.text()).slice(0, 64 * 1024);
  } catch (err) {
    return unavailable(`STS could not be reached: ${err instanceof Error ? err.name : 'error'}`);
  }
  if (status >= 500 || status === 429) return unavailable(`STS answered ${status}`);
  if (status !== 200) return refused(`STS refused the identity proof (${stsErrorCode(text) ?? status})`);
  const arn = callerArnFromResponse(text);
  if (arn === null) return unavailable('STS answered without a caller ARN');
  if (arn !== expected) {
    // The launch's bootstrap token in the hands of another principal or another task.
    console.warn('runner identity refused: the proof is of', arn, 'not of', expected);
    return refused('the identity proof is not of the task this launch started');
  }
  return { ok: true };
}

function unavailable(message: string): IdentityVerdict {
  return { ok: false, error: { code: 'runner_identity_unavailable', message, retryable: true } };
}
