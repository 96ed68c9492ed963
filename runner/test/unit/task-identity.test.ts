// The runner's proof of its task identity (runner/src/identity/task-identity.ts) against a real
// loopback credentials endpoint: what it signs is checked with the project's SigV4 verifier, and
// how often it asks the endpoint is counted.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { identityRequest, verifySigV4 } from '@switchyard/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { loadServeConfig } from '../../src/config.ts';
import { TaskIdentity } from '../../src/identity/task-identity.ts';

const ENDPOINT = { url: 'http://127.0.0.1:9/', region: 'eu-central-1' };
const servers: http.Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

/** A credentials endpoint answering with `answers` in turn (the last one repeats); counts requests. */
async function credentialsEndpoint(answers: Array<{ status: number; body: unknown }>) {
  const seen: Array<string | undefined> = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    const a = answers[Math.min(seen.length - 1, answers.length - 1)] as { status: number; body: unknown };
    res.writeHead(a.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(a.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/creds`, seen };
}

const credentials = (n: number, expiresInMs: number) => ({
  AccessKeyId: `ASIATEST${n}`,
  SecretAccessKey: `secret-${n}`,
  Token: `token-${n}`,
  Expiration: new Date(Date.now() + expiresInMs).toISOString(),
  RoleArn: 'arn:aws:iam::000000000000:role/r',
});

/** What STS would verify: the proof's signature over the request the edge rebuilds from it. */
async function verifies(proof: Awaited<ReturnType<TaskIdentity['prove']>>, runnerId: string, n: number) {
  const r = identityRequest(ENDPOINT.url, runnerId, proof);
  const result = await verifySigV4(
    { method: r.method, target: r.target, headers: r.headers, body: r.body },
    { accessKeyId: `ASIATEST${n}`, secretAccessKey: `secret-${n}` },
    { service: 'sts' },
  );
  return result.ok;
}

describe('TaskIdentity', () => {
  it('signs with the task credentials it fetched (sending the authorization token), and fetches them once', async () => {
    const ep = await credentialsEndpoint([{ status: 200, body: credentials(1, 6 * 3600_000) }]);
    const identity = new TaskIdentity(ENDPOINT, { url: ep.url, authorization: 'task-token' }, 'runner-1');
    const first = await identity.prove();
    const second = await identity.prove();
    expect(first.securityToken).toBe('token-1');
    expect(await verifies(first, 'runner-1', 1)).toBe(true);
    expect(await verifies(second, 'runner-1', 1)).toBe(true);
    // Bound to its runner id: the same proof does not verify for another.
    expect(await verifies(first, 'runner-2', 1)).toBe(false);
    expect(ep.seen).toEqual(['task-token']);
  });

  it('fetches again when the credentials near their expiry, and after a failed fetch', async () => {
    const ep = await credentialsEndpoint([
      { status: 500, body: { message: 'not yet' } },
      { status: 200, body: credentials(2, 60_000) },
      { status: 200, body: credentials(3, 6 * 3600_000) },
    ]);
    const identity = new TaskIdentity(ENDPOINT, { url: ep.url, authorization: undefined }, 'r');
    await expect(identity.prove()).rejects.toThrow('the container credentials endpoint answered 500');
    // Not kept: the next hello asks again. These expire within the refresh margin, so the one
    // after asks again too.
    expect(await verifies(await identity.prove(), 'r', 2)).toBe(true);
    expect(await verifies(await identity.prove(), 'r', 3)).toBe(true);
    expect(await verifies(await identity.prove(), 'r', 3)).toBe(true);
    expect(ep.seen).toHaveLength(3);
  });

  it('refuses an answer that is not credentials, naming the field', async () => {
    const ep = await credentialsEndpoint([{ status: 200, body: { AccessKeyId: 'A' } }]);
    const identity = new TaskIdentity(ENDPOINT, { url: ep.url, authorization: undefined }, 'r');
    await expect(identity.prove()).rejects.toThrow(/container credentials are not usable: SecretAccessKey/);
  });
});

describe('identity config', () => {
  const base = {
    SWITCHYARD_HUB_URL: 'ws://127.0.0.1:1/internal/runner/connect',
    SWITCHYARD_SESSION_ID: 's',
    SWITCHYARD_RUNNER_TOKEN: 't',
    SWITCHYARD_BACKEND: 'claude',
  };
  const identity = {
    SWITCHYARD_IDENTITY_URL: 'https://sts.eu-central-1.amazonaws.com/',
    SWITCHYARD_IDENTITY_REGION: 'eu-central-1',
  };

  it('takes ECS’s relative credentials URI first, as the AWS SDK does', () => {
    const c = loadServeConfig(
      {
        ...base,
        ...identity,
        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/abc',
        AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://127.0.0.1:5/creds',
      },
      '/',
    );
    expect(c.ok && c.value.identity).toEqual({
      endpoint: { url: identity.SWITCHYARD_IDENTITY_URL, region: 'eu-central-1' },
      credentials: { url: 'http://169.254.170.2/v2/credentials/abc', authorization: undefined },
    });
    const none = loadServeConfig(base, '/');
    expect(none.ok && none.value.identity).toBeUndefined();
  });

  it('refuses half an identity, a proof without task credentials, and plain http to another host', () => {
    const errors = [
      { ...base, SWITCHYARD_IDENTITY_URL: identity.SWITCHYARD_IDENTITY_URL },
      { ...base, ...identity },
      { ...base, ...identity, AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://10.0.0.5/creds' },
    ].map((env) => {
      const c = loadServeConfig(env, '/');
      return c.ok ? 'accepted' : c.error.message;
    });
    expect(errors[0]).toContain('SWITCHYARD_IDENTITY_REGION: required with SWITCHYARD_IDENTITY_URL');
    expect(errors[1]).toContain('SWITCHYARD_IDENTITY_URL: the runner must prove its task identity');
    expect(errors[2]).toContain('AWS_CONTAINER_CREDENTIALS_FULL_URI: must be https://');
  });
});
