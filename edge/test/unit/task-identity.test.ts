// The edge's verdict on a runner's proof of task identity (docs/DESIGN.md "Runner identity").
// STS cannot run here: a stand-in fetch answers as STS does, and the tests pin exactly the
// request the edge sends it. The real signature check is in runner/test/host-identity.test.ts
// (the local host's STS against the AWS SDK) and test/e2e/runner-identity.test.ts.
import { signRunnerIdentity, type RunnerIdentityProof } from '@switchyard/protocol';
import { describe, expect, it } from 'vitest';
import { verifyTaskIdentity, type TaskIdentityConfig } from '../../src/launchers/task-identity.ts';

const CONFIG: TaskIdentityConfig = {
  sts: { url: 'https://sts.eu-central-1.amazonaws.com/', region: 'eu-central-1' },
  taskRoleArn: 'arn:aws:iam::123456789012:role/service/SwitchyardRunnerTaskRole',
};
const TASK_ID = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
const REF = `arn:aws:ecs:eu-central-1:123456789012:task/switchyard/${TASK_ID}`;
const TASK_ARN = `arn:aws:sts::123456789012:assumed-role/SwitchyardRunnerTaskRole/${TASK_ID}`;
const CREDENTIALS = { accessKeyId: 'ASIATESTTESTTEST', secretAccessKey: 'secret', sessionToken: 'session-token' };

const identityXml = (arn: string) =>
  `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>${arn}</Arn><UserId>AROAEXAMPLE:x</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>`;
const errorXml = (code: string) =>
  `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>m</Message></Error><RequestId>r</RequestId></ErrorResponse>`;

/** An STS stand-in that records what it was sent and answers `status` with `body`. */
function sts(status: number, body: string) {
  const sent: Array<{ url: string; method: string; headers: Record<string, string>; body: string }> = [];
  const doFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    sent.push({
      url: String(input),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: String(init?.body),
    });
    return new Response(body, { status, headers: { 'content-type': 'text/xml' } });
  }) as typeof fetch;
  return { sent, doFetch };
}

const prove = (runnerId: string): Promise<RunnerIdentityProof> => signRunnerIdentity(CONFIG.sts, runnerId, CREDENTIALS);

describe('verifyTaskIdentity', () => {
  it('sends STS the GetCallerIdentity request the runner signed, and accepts the launched task’s role session', async () => {
    const proof = await prove('runner-1');
    const stand = sts(200, identityXml(TASK_ARN));
    expect(await verifyTaskIdentity(CONFIG, REF, 'runner-1', proof, stand.doFetch)).toEqual({ ok: true });
    expect(stand.sent).toEqual([
      {
        url: 'https://sts.eu-central-1.amazonaws.com/',
        method: 'POST',
        headers: {
          authorization: proof.authorization,
          'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
          'x-amz-date': proof.amzDate,
          'x-amz-security-token': 'session-token',
          'x-switchyard-runner': 'runner-1',
        },
        body: 'Action=GetCallerIdentity&Version=2011-06-15',
      },
    ]);
    expect(proof.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=ASIATESTTESTTEST\/\d{8}\/eu-central-1\/sts\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-switchyard-runner, Signature=[0-9a-f]{64}$/,
    );
  });

  it('refuses another task, another role, another account, and a role session named after the task', async () => {
    const proof = await prove('runner-1');
    for (const arn of [
      `arn:aws:sts::123456789012:assumed-role/SwitchyardRunnerTaskRole/ffffffffffffffffffffffffffffffff`,
      `arn:aws:sts::123456789012:assumed-role/SomeOtherRole/${TASK_ID}`,
      `arn:aws:sts::999999999999:assumed-role/SwitchyardRunnerTaskRole/${TASK_ID}`,
      `arn:aws:iam::123456789012:user/${TASK_ID}`,
    ]) {
      const verdict = await verifyTaskIdentity(CONFIG, REF, 'runner-1', proof, sts(200, identityXml(arn)).doFetch);
      expect(verdict, arn).toEqual({
        ok: false,
        error: {
          code: 'runner_identity_refused',
          message: 'the identity proof is not of the task this launch started',
          retryable: false,
        },
      });
    }
  });

  it('refuses without asking STS: no proof, or a proof that does not sign the runner id', async () => {
    const stand = sts(200, identityXml(TASK_ARN));
    expect(await verifyTaskIdentity(CONFIG, REF, 'runner-1', undefined, stand.doFetch)).toMatchObject({
      ok: false,
      error: { code: 'runner_identity_refused', retryable: false },
    });
    const proof = await prove('runner-1');
    const unbound = {
      ...proof,
      authorization: proof.authorization.replace(';x-switchyard-runner', ''),
    };
    expect(await verifyTaskIdentity(CONFIG, REF, 'runner-1', unbound, stand.doFetch)).toEqual({
      ok: false,
      error: {
        code: 'runner_identity_refused',
        message: 'the identity proof does not sign the runner id and host',
        retryable: false,
      },
    });
    expect(stand.sent).toEqual([]);
  });

  it('a signature STS refuses is refused; STS down, throttling or a garbled answer is worth a retry', async () => {
    const proof = await prove('runner-1');
    expect(
      await verifyTaskIdentity(CONFIG, REF, 'runner-1', proof, sts(403, errorXml('SignatureDoesNotMatch')).doFetch),
    ).toEqual({
      ok: false,
      error: {
        code: 'runner_identity_refused',
        message: 'STS refused the identity proof (SignatureDoesNotMatch)',
        retryable: false,
      },
    });
    for (const [status, body] of [
      [503, errorXml('ServiceUnavailable')],
      [429, errorXml('Throttling')],
      [200, '<html>not sts</html>'],
    ] as const) {
      const verdict = await verifyTaskIdentity(CONFIG, REF, 'runner-1', proof, sts(status, body).doFetch);
      expect(verdict).toMatchObject({ ok: false, error: { code: 'runner_identity_unavailable', retryable: true } });
    }
    const unreachable = (async () => {
      throw new TypeError('connect ECONNREFUSED');
    }) as typeof fetch;
    expect(await verifyTaskIdentity(CONFIG, REF, 'runner-1', proof, unreachable)).toEqual({
      ok: false,
      error: { code: 'runner_identity_unavailable', message: 'STS could not be reached: TypeError', retryable: true },
    });
  });
});
