// The local runner host's stand-in for AWS STS, on a listener of its own as STS is its own
// endpoint: GetCallerIdentity (AWS query protocol: form-encoded `POST /`, XML answers) signed
// with a task's credentials (task-credentials.ts) answers with that task's caller ARN,
// `arn:aws:sts::<account>:assumed-role/<task role>/<task id>`, the way ECS names a task role's
// session. The edge checks a runner's identity proof by forwarding it here, so the checks are
// STS's: a known key with its own session token, unexpired, and a valid SigV4 signature over
// whatever headers the signer chose (verifySigV4). Errors use STS's codes and XML.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { taskCallerArn, verifySigV4 } from '@switchyard/protocol';
import { readBody } from '../http-body.ts';
import type { TaskCredentialStore } from './task-credentials.ts';

const XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';
const VERSION = '2011-06-15';
const MAX_BODY = 64 * 1024;
/** Signs nothing: verifySigV4 answers UnrecognizedClientException for every key against it. */
const NO_KEY = { accessKeyId: '', secretAccessKey: '' };

export interface RecordedStsRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The raw body text (what was signed). */
  rawBody: string;
  status: number;
  /** The STS error code answered, or null for a caller identity. */
  code: string | null;
}

export interface StsOptions {
  credentials: TaskCredentialStore;
  taskRoleArn: string;
  log?: (line: string) => void;
  onRequest?: (r: RecordedStsRequest) => void;
}

interface CallerIdentity {
  arn: string;
  userId: string;
  account: string;
}

interface StsError {
  status: number;
  code: string;
  message: string;
}

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] ?? c);

/**
 * A role's unique id as IAM shows it (`AROA` and 17 upper-case alphanumerics), derived from its
 * ARN so that it is stable across restarts, as a real role's is.
 */
function roleId(roleArn: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const digest = createHash('sha256').update(roleArn).digest();
  return `AROA${Array.from(digest.subarray(0, 17), (b) => alphabet[b % alphabet.length]).join('')}`;
}

/** Checks `taskRoleArn` once, up front; the returned function answers a task's caller identity. */
function callerIdentity(taskRoleArn: string): (taskId: string) => CallerIdentity {
  const probe = taskCallerArn(taskRoleArn, 'x');
  const account = /^arn:[a-z-]+:iam::(\d{12}):role\//.exec(taskRoleArn)?.[1];
  if (probe === null || account === undefined) throw new Error(`taskRoleArn: not an IAM role ARN: ${taskRoleArn}`);
  const id = roleId(taskRoleArn);
  return (taskId) => ({ arn: taskCallerArn(taskRoleArn, taskId) as string, userId: `${id}:${taskId}`, account });
}

/** The request listener of the STS stand-in. Throws at once if `taskRoleArn` is not a role ARN. */
export function stsListener(opts: StsOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const identity = callerIdentity(opts.taskRoleArn);

  const answer = async (
    req: IncomingMessage,
    headers: Record<string, string>,
    raw: Buffer,
    overflowed: boolean,
  ): Promise<StsError | CallerIdentity> => {
    const target = req.url ?? '/';
    const path = target.split('?')[0] ?? '/';
    if (overflowed) return { status: 413, code: 'RequestEntityTooLarge', message: 'Request body too large' };
    if (req.method !== 'POST' || path !== '/')
      return { status: 404, code: 'NotFound', message: `no route for ${req.method} ${path}` };
    const keyId = /Credential=([^/\s,]+)\//.exec(headers.authorization ?? '')?.[1];
    const key = opts.credentials.identify(keyId, headers['x-amz-security-token']);
    const auth = await verifySigV4(
      { method: req.method, target, headers, body: raw },
      key.state === 'valid' ? key.credentials : NO_KEY,
      { service: 'sts' },
    );
    // In STS's order: a malformed request, then the key and its token, then the signature.
    if (!auth.ok && auth.type === 'MissingAuthenticationTokenException')
      return { status: 403, code: 'MissingAuthenticationToken', message: 'Request is missing Authentication Token' };
    if (!auth.ok && auth.type === 'IncompleteSignatureException')
      return { status: 400, code: 'IncompleteSignature', message: auth.message };
    if (key.state === 'unknown')
      return {
        status: 403,
        code: 'InvalidClientTokenId',
        message: 'The security token included in the request is invalid.',
      };
    if (key.state === 'expired')
      return { status: 403, code: 'ExpiredToken', message: 'The security token included in the request is expired' };
    if (!auth.ok) return { status: 403, code: 'SignatureDoesNotMatch', message: auth.message };

    const form = new URLSearchParams(raw.toString('utf8'));
    const action = form.get('Action');
    if (action !== 'GetCallerIdentity' || form.get('Version') !== VERSION)
      return {
        status: 400,
        code: 'InvalidAction',
        message: `Could not find operation ${action ?? '(none)'} for version ${form.get('Version') ?? '(none)'}`,
      };
    return identity(key.taskId);
  };

  return (req, res) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const send = (raw: Buffer, status: number, code: string | null, xml: string, requestId: string) => {
      opts.onRequest?.({
        method: req.method ?? '',
        path: (req.url ?? '/').split('?')[0] ?? '/',
        headers,
        rawBody: raw.toString('utf8'),
        status,
        code,
      });
      res.writeHead(status, {
        'content-type': 'text/xml',
        'content-length': Buffer.byteLength(xml),
        'x-amzn-requestid': requestId,
      });
      res.end(xml);
    };
    readBody(req, MAX_BODY).then(
      async ({ body: raw, overflowed }) => {
        const requestId = randomUUID();
        let out: StsError | CallerIdentity;
        try {
          out = await answer(req, headers, raw, overflowed);
        } catch (err) {
          opts.log?.(`sts: internal error: ${err instanceof Error ? err.message : String(err)}`);
          out = { status: 500, code: 'InternalFailure', message: 'internal error in the local STS stand-in' };
        }
        if ('arn' in out)
          return send(
            raw,
            200,
            null,
            `<GetCallerIdentityResponse xmlns="${XMLNS}"><GetCallerIdentityResult><Arn>${xmlEscape(out.arn)}</Arn>` +
              `<UserId>${xmlEscape(out.userId)}</UserId><Account>${out.account}</Account></GetCallerIdentityResult>` +
              `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
            requestId,
          );
        opts.log?.(`sts: refused ${req.method} ${req.url}: ${out.code}`);
        const type = out.status >= 500 ? 'Receiver' : 'Sender';
        send(
          raw,
          out.status,
          out.code,
          `<ErrorResponse xmlns="${XMLNS}"><Error><Type>${type}</Type><Code>${out.code}</Code>` +
            `<Message>${xmlEscape(out.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
          requestId,
        );
      },
      () => res.destroy(),
    );
  };
}
