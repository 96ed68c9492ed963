import { z } from 'zod';
import { fromBase64Url, toBase64Url } from './encoding.ts';
import { signSigV4, type AwsCredentials } from './sigv4.ts';

// Runner identity (docs/DESIGN.md "Runner identity"). A runner's launch request (ECS RunTask
// overrides) is readable by anyone with ecs:DescribeTasks or CloudTrail, bootstrap token
// included, so the token alone cannot tell the real runner from someone who read it. The runner
// proves which task it is: it signs an STS GetCallerIdentity request with its task role's
// credentials, names its runner id in a signed header, and sends the signature in its hello. The
// edge sends that request to STS itself; STS answers with the caller's ARN, and ECS names a task
// role's session by the task id: `arn:aws:sts::<account>:assumed-role/<task role>/<task id>`.
// This file is what both sides must agree on: the request, the proof, and reading the answer.

/** The signed header that binds a proof to one runner id (and so to this service). */
export const RUNNER_ID_HEADER = 'x-switchyard-runner';
const BODY = 'Action=GetCallerIdentity&Version=2011-06-15';
const CONTENT_TYPE = 'application/x-www-form-urlencoded; charset=utf-8';

/** The signature of one GetCallerIdentity request; everything else in it is fixed. */
export const RunnerIdentityProofSchema = z.strictObject({
  amzDate: z.string().regex(/^\d{8}T\d{6}Z$/, 'must be an X-Amz-Date such as 20261207T040000Z'),
  authorization: z.string().min(1).max(1000),
  /** The temporary credentials' session token (task role credentials always have one). */
  securityToken: z.string().min(1).max(8000).optional(),
});
export type RunnerIdentityProof = z.infer<typeof RunnerIdentityProofSchema>;

/**
 * The header a pooled runner's link upgrade carries its proof in (base64url of the proof's JSON),
 * so the pool coordinator checks it before it gives the link a socket (docs/DESIGN.md "Runner
 * identity"): a link dialled with a pool token read from the launch request takes nothing.
 */
export const RUNNER_PROOF_HEADER = 'x-switchyard-identity';

export function encodeProofHeader(proof: RunnerIdentityProof): string {
  return toBase64Url(new TextEncoder().encode(JSON.stringify(proof)));
}

/** The proof in a RUNNER_PROOF_HEADER value; undefined when absent or not a proof. */
export function decodeProofHeader(value: string | null | undefined): RunnerIdentityProof | undefined {
  const bytes = value == null || value.length > 16_000 ? null : fromBase64Url(value);
  if (bytes === null) return undefined;
  try {
    const parsed = RunnerIdentityProofSchema.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Where a runner's proof is checked: the STS endpoint the edge calls, and its signing region. */
export interface IdentityEndpoint {
  url: string;
  region: string;
}

/** A task role's credentials (temporary: with a session token). */
export type TaskCredentials = AwsCredentials;

/** The GetCallerIdentity request a proof signs, as the edge sends it to STS. */
export function identityRequest(
  endpoint: string,
  runnerId: string,
  proof?: RunnerIdentityProof,
): { url: string; method: 'POST'; target: string; headers: Record<string, string>; body: string } {
  const url = new URL(endpoint);
  const headers: Record<string, string> = {
    'content-type': CONTENT_TYPE,
    host: url.host,
    [RUNNER_ID_HEADER]: runnerId,
  };
  if (proof !== undefined) {
    headers['x-amz-date'] = proof.amzDate;
    headers.authorization = proof.authorization;
    if (proof.securityToken !== undefined) headers['x-amz-security-token'] = proof.securityToken;
  }
  return { url: url.href, method: 'POST', target: `${url.pathname}${url.search}`, headers, body: BODY };
}

/** The runner's side: signs the request for `runnerId` with its task credentials. */
export async function signRunnerIdentity(
  endpoint: IdentityEndpoint,
  runnerId: string,
  credentials: TaskCredentials,
  now?: number,
): Promise<RunnerIdentityProof> {
  const r = identityRequest(endpoint.url, runnerId);
  const signed = await signSigV4(
    { method: r.method, target: r.target, headers: r.headers, body: r.body },
    credentials,
    {
      region: endpoint.region,
      service: 'sts',
      ...(now !== undefined && { now }),
    },
  );
  return {
    amzDate: signed['x-amz-date'],
    authorization: signed.authorization,
    ...(credentials.sessionToken !== undefined && { securityToken: credentials.sessionToken }),
  };
}

/** The headers a proof must have signed: without the runner id, it would bind to nothing. */
export function proofSignsRunnerId(proof: RunnerIdentityProof): boolean {
  const m = /SignedHeaders=([a-z0-9;-]+)/.exec(proof.authorization);
  const signed = m?.[1]?.split(';') ?? [];
  return signed.includes(RUNNER_ID_HEADER) && signed.includes('host');
}

/** The caller's ARN out of STS's GetCallerIdentity answer (XML), or null. */
export function callerArnFromResponse(xml: string): string | null {
  const result = /<GetCallerIdentityResult>([\s\S]*?)<\/GetCallerIdentityResult>/.exec(xml)?.[1];
  const arn = result === undefined ? undefined : /<Arn>([^<]{1,2048})<\/Arn>/.exec(result)?.[1];
  return arn?.trim() ?? null;
}

/** The error code of an STS error answer (`<Code>…</Code>`), or null. */
export function stsErrorCode(xml: string): string | null {
  return /<Code>([A-Za-z.]{1,100})<\/Code>/.exec(xml)?.[1] ?? null;
}

/** The ECS task id at the end of a task ARN (`arn:…:task/<cluster>/<id>`), or the ref itself. */
export function ecsTaskId(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

/**
 * The ARN an ECS task of `taskRoleArn` has when it calls STS:
 * `arn:<partition>:sts::<account>:assumed-role/<role name>/<task id>`. A role ARN's path is not
 * part of it. Null when `taskRoleArn` is not an IAM role ARN.
 */
export function taskCallerArn(taskRoleArn: string, taskId: string): string | null {
  const m = /^arn:([a-z-]+):iam::(\d{12}):role\/(?:[\w+=,.@/-]*\/)?([\w+=,.@-]{1,64})$/.exec(taskRoleArn);
  if (m === null) return null;
  const [, partition, account, roleName] = m;
  return `arn:${partition}:sts::${account}:assumed-role/${roleName}/${taskId}`;
}
