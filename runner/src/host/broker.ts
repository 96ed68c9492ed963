// The launch broker in front of the local host's ECS API, as the broker's Lambda stands in front of
// ECS in production (docs/DESIGN.md "A leaked edge key running its own command"): the edge signs
// with the broker key, the broker checks every request and signs what it passes on with the host's
// own key, which the edge does not hold. Its settings are a file the stack writes (the edge's
// origins are only all known once wrangler dev has started), read on every request.
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { handleBrokerRequest, loadBrokerConfig } from '@switchyard/launch-broker';
import { fetchSigned, verifySigV4, type SigV4Credentials } from '@switchyard/protocol';
import { readBody } from '../http-body.ts';

export interface HostBrokerOptions {
  /** JSON of the broker's environment (loadBrokerConfig's names; the endpoints are filled in here). */
  configFile: string;
  /** What the edge signs with. */
  edgeKey: SigV4Credentials;
  /** What the broker signs with: the host's ECS API key. */
  upstream: SigV4Credentials;
  /** The host's ECS API and STS stand-in. */
  ecsUrl: string;
  stsUrl: string;
  log?: (line: string) => void;
}

const MAX_BODY = 1024 * 1024;

export function hostBroker(o: HostBrokerOptions): http.RequestListener {
  const log = (line: string) => o.log?.(`broker: ${line}`);
  return (req, res) => {
    const respond = (status: number, headers: Record<string, string>, body: string) => {
      res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    readBody(req, MAX_BODY)
      .then(
        async ({ body, overflowed }) => {
          if (overflowed) return respond(413, {}, '');
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
          const request = {
            method: req.method ?? '',
            target: req.url ?? '/',
            headers,
            body,
            ...(req.socket.remoteAddress !== undefined && { sourceIp: req.socket.remoteAddress }),
          };
          if (request.method === 'POST' && request.target === '/switchyard/probe') {
            const r = await probe(request, o);
            return respond(r.status, { 'content-type': 'application/json' }, r.body);
          }
          const env = JSON.parse(readFileSync(o.configFile, 'utf8')) as Record<string, string>;
          const loaded = loadBrokerConfig({
            ...env,
            BROKER_KEY_ID: o.edgeKey.accessKeyId,
            ECS_ENDPOINT: o.ecsUrl,
            STS_ENDPOINT: o.stsUrl,
          });
          if (!loaded.ok) {
            log(loaded.error);
            return respond(500, {}, JSON.stringify({ __type: 'ServerException', message: loaded.error }));
          }
          const r = await handleBrokerRequest(request, loaded.config, {
            edgeKeys: async () => [o.edgeKey],
            upstream: async () => o.upstream,
            log,
          });
          respond(r.status, r.headers, r.body);
        },
        () => res.destroy(),
      )
      .catch((err: unknown) => {
        log(`internal error: ${err instanceof Error ? err.message : String(err)}`);
        if (!res.headersSent)
          respond(500, {}, JSON.stringify({ __type: 'ServerException', message: 'internal error' }));
      });
  };
}

/**
 * The host's own `probe` route (the launcher's `host` probe mode, local only): checked against the
 * edge's key like every broker request, then passed to the host signed with its key.
 */
async function probe(
  r: { method: string; target: string; headers: Record<string, string>; body: Uint8Array },
  o: HostBrokerOptions,
): Promise<{ status: number; body: string }> {
  const auth = await verifySigV4(r, o.edgeKey, { service: 'ecs' });
  if (!auth.ok) return { status: 403, body: JSON.stringify({ __type: auth.type, message: auth.message }) };
  const res = await fetchSigned(
    new URL('/switchyard/probe', o.ecsUrl),
    { headers: { 'content-type': 'application/json' }, body: Buffer.from(r.body).toString('utf8') },
    o.upstream,
    { region: auth.region, service: 'ecs' },
  );
  return { status: res.status, body: await res.text() };
}
