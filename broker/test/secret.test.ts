// readSecretVersion / readKeyVersions: GetSecretValue by version stage, signed with the broker's own temporary credentials, against
// a loopback server playing Secrets Manager that verifies the signature and records the request.
import { createServer, type Server } from 'node:http';
import { verifySigV4 } from '@switchyard/protocol';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AwsCredentials } from '@switchyard/protocol';
import { readKeyVersions, readSecretVersion } from '../src/secret.ts';
import { close, listen } from './loopback.ts';

const REGION = 'eu-central-1';
const ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:switchyard/broker-key-AbCdEf';
const CREDENTIALS: Required<AwsCredentials> = {
  accessKeyId: 'ASIALAMBDAROLE',
  secretAccessKey: 'lambda-role-secret',
  sessionToken: 'lambda-role-session-token',
};
const BROKER_KEY = 'broker-key-0123456789abcdef0123456789abcdef';

interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
  raw: string;
  auth: Awaited<ReturnType<typeof verifySigV4>>;
}
const requests: Recorded[] = [];
/** The answer per version stage asked for. */
let replies: Record<string, { status: number; body: string }> = {};
const CREATED = 1_764_000_000.5;
const PREVIOUS_KEY = 'broker-key-before-fedcba9876543210fedcba98765';
const notFound = {
  status: 400,
  body: JSON.stringify({ __type: 'ResourceNotFoundException', message: `no version of ${ARN} in that stage` }),
};

const server: Server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const raw = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      // Verified against whichever credentials the test used: the key id picks them.
      const auth = await verifySigV4(
        { method: req.method ?? '', target: req.url ?? '', headers, body: new Uint8Array(raw) },
        headers.authorization?.includes(CREDENTIALS.accessKeyId)
          ? CREDENTIALS
          : { accessKeyId: 'AKIDSTATIC', secretAccessKey: 'static' },
        { service: 'secretsmanager' },
      );
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers, raw: raw.toString('utf8'), auth });
      const stage = (JSON.parse(raw.toString('utf8')) as { VersionStage?: string }).VersionStage ?? '';
      const answer = auth.ok
        ? (replies[stage] ?? notFound)
        : { status: 403, body: JSON.stringify({ __type: auth.type, message: auth.message }) };
      res.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.1' }).end(answer.body);
    })();
  });
});
let endpoint = '';

beforeAll(async () => {
  endpoint = `${await listen(server)}/`;
});
afterAll(() => close(server));
beforeEach(() => {
  requests.length = 0;
  replies = {
    AWSCURRENT: {
      status: 200,
      body: JSON.stringify({ ARN, Name: 'switchyard/broker-key', SecretString: BROKER_KEY, CreatedDate: CREATED }),
    },
  };
});

/** The rejection's message. */
async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('expected the read to fail');
}

const read = (credentials: AwsCredentials = CREDENTIALS) =>
  readSecretVersion(ARN, 'AWSCURRENT', REGION, credentials, { endpoint });

describe('readSecretVersion', () => {
  it('sends one GetSecretValue of the arn and stage, signed for secretsmanager with the session token, and returns the string and its date', async () => {
    expect(await read()).toEqual({ value: BROKER_KEY, createdAt: CREATED * 1000 });
    expect(requests).toHaveLength(1);
    const [r] = requests;
    expect(r?.method).toBe('POST');
    expect(r?.path).toBe('/');
    expect(r?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(r?.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(r?.raw).toBe(JSON.stringify({ SecretId: ARN, VersionStage: 'AWSCURRENT' }));
    expect(r?.auth).toEqual({
      ok: true,
      accessKeyId: CREDENTIALS.accessKeyId,
      region: REGION,
      service: 'secretsmanager',
    });
    expect(r?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=ASIALAMBDAROLE\/\d{8}\/eu-central-1\/secretsmanager\/aws4_request, /,
    );
    expect(r?.headers['x-amz-security-token']).toBe(CREDENTIALS.sessionToken);
    expect(/SignedHeaders=([a-z0-9;-]+)/.exec(r?.headers.authorization ?? '')?.[1]?.split(';')).toContain(
      'x-amz-security-token',
    );
  });

  it('long-term credentials: no session token header', async () => {
    const staticKey = { accessKeyId: 'AKIDSTATIC', secretAccessKey: 'static' };
    expect(await read(staticKey)).toMatchObject({ value: BROKER_KEY });
    expect(requests[0]?.auth).toMatchObject({ ok: true, accessKeyId: 'AKIDSTATIC' });
    expect(requests[0]?.headers['x-amz-security-token']).toBeUndefined();
  });

  it('an error answer becomes an error naming the stage, its status and type, not what the answer said', async () => {
    const told = `Secrets Manager can't decrypt ${ARN}.`;
    replies.AWSCURRENT = { status: 400, body: JSON.stringify({ __type: 'DecryptionFailure', message: told }) };
    const message = await failure(read());
    expect(message).toBe('Secrets Manager GetSecretValue (AWSCURRENT) answered 400 (DecryptionFailure)');
    expect(message).not.toContain(ARN);
  });

  it('no version in the stage: null', async () => {
    expect(await readSecretVersion(ARN, 'AWSPREVIOUS', REGION, CREDENTIALS, { endpoint })).toBeNull();
  });

  it('a request the service refuses (wrong credentials) names the type it answered', async () => {
    const wrong = { ...CREDENTIALS, secretAccessKey: 'not-the-role-secret' };
    const message = await failure(read(wrong));
    expect(message).toBe('Secrets Manager GetSecretValue (AWSCURRENT) answered 403 (InvalidSignatureException)');
  });

  it('a secret too short to be a broker key is refused without echoing it', async () => {
    const short = 'k3y-0123456789abcdef';
    replies.AWSCURRENT = { status: 200, body: JSON.stringify({ ARN, SecretString: short, CreatedDate: CREATED }) };
    const message = await failure(read());
    expect(message).toBe('the broker key secret (AWSCURRENT) is unusable: the broker key is too short');
    expect(message).not.toContain(short);
  });

  it('a binary secret (no SecretString) is refused', async () => {
    replies.AWSCURRENT = {
      status: 200,
      body: JSON.stringify({ ARN, SecretBinary: Buffer.from(BROKER_KEY).toString('base64'), CreatedDate: CREATED }),
    };
    const message = await failure(read());
    expect(message).toMatch(/^the broker key secret \(AWSCURRENT\) is unusable: /);
    expect(message).not.toContain(Buffer.from(BROKER_KEY).toString('base64'));
  });
});

describe('readKeyVersions', () => {
  it('reads the current and the previous version', async () => {
    replies.AWSPREVIOUS = {
      status: 200,
      body: JSON.stringify({ ARN, SecretString: PREVIOUS_KEY, CreatedDate: CREATED - 86_400 }),
    };
    expect(await readKeyVersions(ARN, REGION, CREDENTIALS, { endpoint })).toEqual({
      current: { value: BROKER_KEY, createdAt: CREATED * 1000 },
      previous: { value: PREVIOUS_KEY, createdAt: (CREATED - 86_400) * 1000 },
    });
    expect(requests.map((r) => JSON.parse(r.raw).VersionStage).sort()).toEqual(['AWSCURRENT', 'AWSPREVIOUS']);
  });

  it('a secret never rotated has no previous version', async () => {
    expect(await readKeyVersions(ARN, REGION, CREDENTIALS, { endpoint })).toEqual({
      current: { value: BROKER_KEY, createdAt: CREATED * 1000 },
      previous: null,
    });
  });

  it('no current version (the secret is gone) is an error', async () => {
    replies = {};
    expect(await failure(readKeyVersions(ARN, REGION, CREDENTIALS, { endpoint }))).toBe(
      'the broker key secret has no AWSCURRENT version',
    );
  });
});
