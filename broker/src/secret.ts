// The broker key, read from Secrets Manager with the broker's own credentials: one signed
// GetSecretValue (the Lambda runtime's SDK would load far more for one call).
import { signSigV4 } from '@switchyard/protocol';
import { z } from 'zod';
import type { AwsCredentials } from './broker.ts';

const SecretValueSchema = z.object({ SecretString: z.string().min(32, 'the broker key is too short') });

export async function readSecretString(
  secretArn: string,
  region: string,
  credentials: AwsCredentials,
  o: { endpoint?: string; fetch?: typeof fetch } = {},
): Promise<string> {
  const url = new URL(o.endpoint ?? `https://secretsmanager.${region}.amazonaws.com/`);
  const body = JSON.stringify({ SecretId: secretArn });
  const headers: Record<string, string> = {
    host: url.host,
    'content-type': 'application/x-amz-json-1.1',
    'x-amz-target': 'secretsmanager.GetSecretValue',
    ...(credentials.sessionToken !== undefined && { 'x-amz-security-token': credentials.sessionToken }),
  };
  const signed = await signSigV4({ method: 'POST', target: url.pathname, headers, body }, credentials, {
    region,
    service: 'secretsmanager',
  });
  const { host: _host, ...sent } = headers;
  const res = await (o.fetch ?? fetch)(url, { method: 'POST', headers: { ...sent, ...signed }, body });
  const text = await res.text();
  if (!res.ok) {
    const type = /"__type"\s*:\s*"([^"]{1,100})"/.exec(text)?.[1] ?? 'unknown error';
    throw new Error(`Secrets Manager GetSecretValue answered ${res.status} (${type})`);
  }
  const parsed = SecretValueSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`the broker key secret is unusable: ${parsed.error.issues[0]?.message}`);
  return parsed.data.SecretString;
}
