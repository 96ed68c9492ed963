// The broker key, read from Secrets Manager with the broker's own credentials: signed
// GetSecretValue calls (the Lambda runtime's SDK would load far more for them). A rotation
// (`put-secret-value`) makes the new value AWSCURRENT and the one before it AWSPREVIOUS; both are
// read, so an edge still signing with the one before keeps working (broker/src/keyring.ts).
import { fetchSigned, type AwsCredentials } from '@switchyard/protocol';
import { z } from 'zod';
import type { KeyVersions, SecretVersion } from './keyring.ts';

const SecretValueSchema = z.object({
  SecretString: z.string().min(32, 'the broker key is too short'),
  /** Epoch seconds, as the JSON protocol writes a timestamp. */
  CreatedDate: z.number({ error: 'no CreatedDate' }),
});

export type VersionStage = 'AWSCURRENT' | 'AWSPREVIOUS';

interface ReadOptions {
  endpoint?: string;
  fetch?: typeof fetch;
}

/** One version of the secret, or null when the secret has no version in that stage. */
export async function readSecretVersion(
  secretArn: string,
  stage: VersionStage,
  region: string,
  credentials: AwsCredentials,
  o: ReadOptions = {},
): Promise<SecretVersion | null> {
  const res = await fetchSigned(
    new URL(o.endpoint ?? `https://secretsmanager.${region}.amazonaws.com/`),
    {
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' },
      body: JSON.stringify({ SecretId: secretArn, VersionStage: stage }),
    },
    credentials,
    { region, service: 'secretsmanager', ...(o.fetch && { fetch: o.fetch }) },
  );
  const text = await res.text();
  if (!res.ok) {
    const type = /"__type"\s*:\s*"([^"]{1,100})"/.exec(text)?.[1] ?? 'unknown error';
    if (type.endsWith('ResourceNotFoundException')) return null;
    throw new Error(`Secrets Manager GetSecretValue (${stage}) answered ${res.status} (${type})`);
  }
  const parsed = SecretValueSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`the broker key secret (${stage}) is unusable: ${parsed.error.issues[0]?.message}`);
  return { value: parsed.data.SecretString, createdAt: parsed.data.CreatedDate * 1000 };
}

/** The current broker key and the one before it, read side by side. */
export async function readKeyVersions(
  secretArn: string,
  region: string,
  credentials: AwsCredentials,
  o: ReadOptions = {},
): Promise<KeyVersions> {
  const [current, previous] = await Promise.all([
    readSecretVersion(secretArn, 'AWSCURRENT', region, credentials, o),
    readSecretVersion(secretArn, 'AWSPREVIOUS', region, credentials, o),
  ]);
  if (current === null) throw new Error('the broker key secret has no AWSCURRENT version');
  return { current, previous };
}
