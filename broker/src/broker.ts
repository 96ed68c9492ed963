// The launch broker's one job (docs/DESIGN.md "A leaked edge key running its own command"): take an
// ECS request from the edge, signed with the broker key, check it against the rules, and send ECS
// exactly what was checked, signed with the broker's own AWS credentials. The edge never holds a
// credential that can run a task some other way. Errors use ECS's JSON shape, so the edge's AWS SDK
// reads them as it reads ECS's own.
import { fetchSigned, verifySigV4, type AwsCredentials, type SigV4Credentials } from '@switchyard/protocol';
import type { BrokerConfig } from './config.ts';
import { checkRequest, OPERATIONS, type Operation } from './rules.ts';
import { countRunning, listTasksBody, type TaskPage } from './running-cap.ts';

export interface BrokerDeps {
  /**
   * The keys the edge may sign with, the current one first: the broker key (the secret of
   * `BROKER_KEY_ID`) and, for a while after a rotation, the one before it (keyring.ts).
   */
  edgeKeys: () => Promise<readonly SigV4Credentials[]>;
  /** The broker's own credentials, asked for per request (temporary credentials rotate). */
  upstream: () => Promise<AwsCredentials>;
  fetch?: typeof fetch;
  now?: () => number;
  /** One line per request: the operation, the verdict and the caller's address, never a body or a header's value. */
  log?: (line: string) => void;
}

export interface BrokerHttpRequest {
  method: string;
  /** Path and query as sent. */
  target: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The caller's address, for the log: who used a key that leaked. */
  sourceIp?: string;
}

export interface BrokerHttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const JSON_11 = 'application/x-amz-json-1.1';
const TARGET_PREFIX = 'AmazonEC2ContainerServiceV20141113.';

const answer = (status: number, type: string, message: string): BrokerHttpResponse => ({
  status,
  headers: { 'content-type': JSON_11, 'x-amzn-errortype': type },
  body: JSON.stringify({ __type: type, message }),
});

export async function handleBrokerRequest(
  req: BrokerHttpRequest,
  config: BrokerConfig,
  deps: BrokerDeps,
): Promise<BrokerHttpResponse> {
  const from = req.sourceIp === undefined ? '' : ` (from ${req.sourceIp.slice(0, 64)})`;
  const log = (line: string) => deps.log?.(`${line}${from}`);
  if (req.method !== 'POST' || req.target !== '/')
    return answer(404, 'UnknownOperationException', `no route for ${req.method} ${req.target.slice(0, 100)}`);
  const keys = await deps.edgeKeys();
  const auth = await verifyWithAny(req, keys, deps.now?.());
  if (!auth.ok) {
    log(`refused: ${auth.type}`);
    return answer(auth.type === 'IncompleteSignatureException' ? 400 : 403, auth.type, auth.message);
  }
  // Said in the log, so an operator sees when the edge has moved to a rotated key.
  if (auth.keyIndex > 0) log('signed with the previous broker key');
  if (auth.region !== config.region)
    return answer(403, 'InvalidSignatureException', `Credential should be scoped to a valid region: ${config.region}`);
  if (!(req.headers['content-type'] ?? '').startsWith(JSON_11))
    return answer(400, 'SerializationException', `Content-Type must be ${JSON_11}`);
  const target = req.headers['x-amz-target'] ?? '';
  const operation = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : '';
  if (!(OPERATIONS as readonly string[]).includes(operation)) {
    log(`refused: operation ${operation.slice(0, 64) || '(none)'}`);
    return answer(403, 'AccessDeniedException', `the launch broker passes on only ${OPERATIONS.join(', ')}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(req.body));
  } catch {
    return answer(400, 'SerializationException', 'the body is not JSON');
  }
  const verdict = checkRequest(operation as Operation, body, config.rules);
  if (!verdict.ok) {
    log(`refused: ${operation} ${verdict.field}`);
    return answer(403, 'AccessDeniedException', `the launch broker refused ${verdict.field}: ${verdict.message}`);
  }
  if (operation === 'RunTask') {
    const refused = await overCap(config, deps, log);
    if (refused !== null) return refused;
  }
  return forward(operation as Operation, JSON.stringify(verdict.body), config, deps, log);
}

/**
 * The refusal for a RunTask the cluster's ceiling leaves no room for, or null. Counting that fails
 * refuses too (503, which the SDK retries): an unknown count is not room.
 */
async function overCap(
  config: BrokerConfig,
  deps: BrokerDeps,
  log: (line: string) => void,
): Promise<BrokerHttpResponse | null> {
  const cap = config.maxRunningTasks;
  let running: number;
  try {
    running = await countRunning(async (token) => {
      const res = await sendUpstream(
        'ListTasks',
        JSON.stringify(listTasksBody(config.rules.cluster, token)),
        config,
        deps,
      );
      if (!res.ok) throw new Error(`ListTasks → ${res.status} ${res.headers.get('x-amzn-errortype') ?? ''}`.trim());
      const page = (await res.json()) as Partial<TaskPage>;
      return { taskArns: Array.isArray(page.taskArns) ? page.taskArns : [], nextToken: page.nextToken ?? undefined };
    }, cap);
  } catch (err) {
    log(`refused: RunTask, the running tasks could not be counted (${err instanceof Error ? err.message : 'error'})`);
    return answer(503, 'ServiceUnavailableException', 'the launch broker could not count the running runner tasks');
  }
  if (running < cap) return null;
  log(`refused: RunTask at the ceiling of ${cap} running tasks`);
  return answer(
    403,
    'AccessDeniedException',
    `the launch broker refused RunTask: the deployment's ceiling of ${cap} running runner tasks is reached (maxRunners)`,
  );
}

/** `body` to ECS as `operation`, signed with the broker's own credentials. */
async function sendUpstream(
  operation: string,
  body: string,
  config: BrokerConfig,
  deps: BrokerDeps,
): Promise<Response> {
  return fetchSigned(
    new URL(config.ecsEndpoint),
    { headers: { 'content-type': JSON_11, 'x-amz-target': `${TARGET_PREFIX}${operation}` }, body },
    await deps.upstream(),
    {
      region: config.region,
      service: 'ecs',
      ...(deps.now && { now: deps.now() }),
      ...(deps.fetch && { fetch: deps.fetch }),
    },
  );
}

/** The first key the signature verifies with, or the current key's refusal. */
async function verifyWithAny(req: BrokerHttpRequest, keys: readonly SigV4Credentials[], now: number | undefined) {
  const request = { method: req.method, target: req.target, headers: req.headers, body: req.body };
  let first: Exclude<Awaited<ReturnType<typeof verifySigV4>>, { ok: true }> | undefined;
  for (const [keyIndex, key] of keys.entries()) {
    const auth = await verifySigV4(request, key, { service: 'ecs', ...(now !== undefined && { now }) });
    if (auth.ok) return { ...auth, keyIndex };
    first ??= auth;
  }
  return first ?? { ok: false as const, type: 'InvalidSignatureException', message: 'the broker holds no key' };
}

async function forward(
  operation: Operation,
  body: string,
  config: BrokerConfig,
  deps: BrokerDeps,
  log: (line: string) => void,
): Promise<BrokerHttpResponse> {
  let res: Response;
  try {
    res = await sendUpstream(operation, body, config, deps);
  } catch (err) {
    log(`${operation}: ECS unreachable (${err instanceof Error ? err.name : 'error'})`);
    return answer(503, 'ServiceUnavailableException', 'the launch broker could not reach ECS');
  }
  const text = await res.text();
  log(`${operation} → ${res.status}`);
  const type = res.headers.get('x-amzn-errortype');
  return {
    status: res.status,
    headers: {
      'content-type': res.headers.get('content-type') ?? JSON_11,
      ...(type !== null && { 'x-amzn-errortype': type }),
    },
    body: text,
  };
}
