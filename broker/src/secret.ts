// The broker key, read from Secrets Manager with the broker's own credentials: one signed
// GetSecretValue (the Lambda runtime's SDK would load far more for one call).
import { fetchSigned, type AwsCredentials } from '@switchyard/protocol';
import { z } from 'zod';

const SecretValueSchema = z.object({ SecretString: z.string().min(32, 'the broker key is too short') });

export async function readSecretString(
  secretArn: string,
  region: string,
  credentials: AwsCredentials,
  o: { endpoint?: string; fetch?: typeof fetch } = {},
): Promise<string> {
  const res = await fetchSigned(
    new URL(o.endpoint ?? `https://secretsmanager.${region}.amazonaws.com/`),
    {
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' },
      body: JSON.stringify({ SecretId: secretArn }),
    },
    credentials,
    { region, service: 'secretsmanager', ...(o.fetch && { fetch: o.fetch }) },
  );
  const text = await res.text();
  if (!res.ok) {
    const type = /"__type"\s*:\s*"([^"]{1,100})"/.exec(text)?.[1] ?? 'unknown error';
    throw new Error(`Secrets Manager GetSecretValue answered ${res.status} (${type})`);
  }
  const parsed = SecretValueSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`the broker key secret is unusable: ${parsed.error.issues[0]?.message}`);
  return parsed.data.SecretString;
}
