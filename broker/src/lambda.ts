// The launch broker as an AWS Lambda behind a function URL (infra/src/runner-stack.ts). The URL
// takes every caller (auth type NONE): the broker authenticates each request itself, by its SigV4
// signature with the broker key, before anything else is read.
import type { AwsCredentials } from '@switchyard/protocol';
import { handleBrokerRequest } from './broker.ts';
import { loadBrokerConfig, type BrokerConfig } from './config.ts';
import { brokerKeyring } from './keyring.ts';
import { readKeyVersions } from './secret.ts';

/** The fields of a function URL event (payload format 2.0) the broker reads. */
export interface FunctionUrlEvent {
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { http: { method: string; sourceIp?: string } };
}

export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

const env = process.env;

/** The Lambda role's credentials, as the runtime puts them in the environment. */
function roleCredentials(): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID ?? '';
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY ?? '';
  if (accessKeyId === '' || secretAccessKey === '') throw new Error('the Lambda runtime gave no credentials');
  return { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN && { sessionToken: env.AWS_SESSION_TOKEN }) };
}

let loaded: ReturnType<typeof loadBrokerConfig> | undefined;
let keyring: (() => Promise<string[]>) | undefined;

/** One keyring per execution environment: it reads the secret at first use and every few minutes. */
function brokerKeys(config: BrokerConfig): Promise<string[]> {
  const arn = env.BROKER_KEY_SECRET_ARN ?? '';
  if (arn === '') return Promise.reject(new Error('BROKER_KEY_SECRET_ARN is not set'));
  keyring ??= brokerKeyring({
    read: () => readKeyVersions(arn, config.region, roleCredentials()),
    log: (line) => console.error(`launch broker: ${line}`),
  });
  return keyring();
}

const serverError = (message: string): FunctionUrlResult => ({
  statusCode: 500,
  headers: { 'content-type': 'application/x-amz-json-1.1' },
  body: JSON.stringify({ __type: 'ServerException', message }),
});

export async function handler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  loaded ??= loadBrokerConfig(env);
  if (!loaded.ok) {
    console.error(loaded.error);
    return serverError('the launch broker is not configured; its log names what is missing');
  }
  const config = loaded.config;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
  const body = Buffer.from(event.body ?? '', event.isBase64Encoded === true ? 'base64' : 'utf8');
  try {
    const res = await handleBrokerRequest(
      {
        method: event.requestContext.http.method,
        target: `${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`,
        headers,
        body,
        ...(event.requestContext.http.sourceIp !== undefined && { sourceIp: event.requestContext.http.sourceIp }),
      },
      config,
      {
        edgeKeys: async () =>
          (await brokerKeys(config)).map((secretAccessKey) => ({ accessKeyId: config.keyId, secretAccessKey })),
        upstream: async () => roleCredentials(),
        log: (line) => console.log(line),
      },
    );
    return { statusCode: res.status, headers: res.headers, body: res.body };
  } catch (err) {
    console.error(`launch broker: ${err instanceof Error ? err.message : String(err)}`);
    return serverError('the launch broker failed; its log says why');
  }
}
