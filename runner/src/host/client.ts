// Signed calls to the local runner host's own routes (`/switchyard/tasks`, `/switchyard/probe`)
// from Node: scripts/lib/stack.ts and tests. ECS operations go through the AWS SDK instead.
import { signSigV4, type SigV4Credentials } from '@switchyard/protocol';

export async function hostFetch(
  hostUrl: string,
  path: string,
  credentials: SigV4Credentials,
  init: { method?: 'GET' | 'POST'; body?: string } = {},
): Promise<Response> {
  const url = new URL(path, hostUrl);
  const method = init.method ?? 'GET';
  const body = init.body ?? '';
  const headers: Record<string, string> = body === '' ? {} : { 'content-type': 'application/json' };
  const signed = await signSigV4(
    { method, target: `${url.pathname}${url.search}`, headers: { ...headers, host: url.host }, body },
    credentials,
    { region: 'us-east-1', service: 'ecs' },
  );
  return fetch(url, { method, headers: { ...headers, ...signed }, ...(body !== '' && { body }) });
}
