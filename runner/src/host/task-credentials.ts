// Task role credentials of the local runner host, standing in for what ECS gives a task: temporary
// credentials (an `ASIA…` key, a secret, a session token, an expiration) served to that task
// alone by the container credentials endpoint, which the AWS SDK in the task finds through
// AWS_CONTAINER_CREDENTIALS_FULL_URI and authenticates to with AWS_CONTAINER_AUTHORIZATION_TOKEN.
// The STS stand-in (sts.ts) looks keys up here to tell which task signed a request.
//
// ECS rotates a task's credentials before they expire and older ones stay valid until their own
// expiration; this store does the same, so a task outliving one set keeps working. Unlike ECS,
// a task's credentials die with the task: nothing outside a running task has a use for them, and
// a leaked key must not outlive the runner that could have leaked it. STS then answers
// ExpiredToken for them, as it does for a session past its expiration.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** Under this much validity left, the endpoint hands out a fresh set (ECS rotates well ahead too). */
const ROTATE_BEFORE_MS = 60 * 60_000;
const DEFAULT_LIFETIME_MS = 6 * 60 * 60_000;
const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** The container credentials endpoint's answer, field for field what ECS serves. */
export interface ContainerCredentials {
  AccessKeyId: string;
  SecretAccessKey: string;
  Token: string;
  /** RFC 3339, whole seconds. */
  Expiration: string;
  RoleArn: string;
}

export type KeyState =
  | { state: 'unknown' }
  | { state: 'expired' }
  | { state: 'valid'; taskId: string; credentials: { accessKeyId: string; secretAccessKey: string } };

interface KeyEntry {
  taskId: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiresAt: number;
}

interface TaskEntry {
  authorizationToken: string;
  current: KeyEntry;
  stopped: boolean;
}

export type EndpointAnswer = { status: 200; credentials: ContainerCredentials } | { status: 403 | 404 };

const upperAlnum = (n: number) => Array.from({ length: n }, () => UPPER_ALNUM[randomInt(UPPER_ALNUM.length)]).join('');

/** Equal strings, compared in constant time (digests, so lengths leak nothing either). */
function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export class TaskCredentialStore {
  private readonly tasks = new Map<string, TaskEntry>();
  private readonly keys = new Map<string, KeyEntry>();
  private readonly roleArn: string;
  private readonly lifetimeMs: number;
  private readonly now: () => number;

  constructor(opts: { roleArn: string; lifetimeMs?: number; now?: () => number }) {
    this.roleArn = opts.roleArn;
    this.lifetimeMs = opts.lifetimeMs ?? DEFAULT_LIFETIME_MS;
    this.now = opts.now ?? Date.now;
  }

  /** Issues a task's credentials; the answer is the token its endpoint requests must carry. */
  issue(taskId: string): string {
    const authorizationToken = randomBytes(32).toString('base64url');
    this.tasks.set(taskId, { authorizationToken, current: this.newKey(taskId), stopped: false });
    return authorizationToken;
  }

  /** The endpoint: a live task's current credentials for the holder of its token. */
  serve(taskId: string, authorization: string | undefined): EndpointAnswer {
    const task = this.tasks.get(taskId);
    if (task === undefined || task.stopped) return { status: 404 };
    if (!sameSecret(authorization, task.authorizationToken)) return { status: 403 };
    if (task.current.expiresAt - this.now() < ROTATE_BEFORE_MS) task.current = this.newKey(taskId);
    const k = task.current;
    return {
      status: 200,
      credentials: {
        AccessKeyId: k.accessKeyId,
        SecretAccessKey: k.secretAccessKey,
        Token: k.sessionToken,
        Expiration: new Date(k.expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        RoleArn: this.roleArn,
      },
    };
  }

  /**
   * What STS makes of a request's access key and the session token sent with it: unknown (no
   * such key, or not its token: real STS refuses a temporary key without its token), expired
   * (past its expiration, or its task stopped), or valid with the secret to check the signature.
   */
  identify(accessKeyId: string | undefined, sessionToken: string | undefined): KeyState {
    const k = accessKeyId === undefined ? undefined : this.keys.get(accessKeyId);
    if (k === undefined || !sameSecret(sessionToken, k.sessionToken)) return { state: 'unknown' };
    if (this.tasks.get(k.taskId)?.stopped !== false || k.expiresAt <= this.now()) return { state: 'expired' };
    return {
      state: 'valid',
      taskId: k.taskId,
      credentials: { accessKeyId: k.accessKeyId, secretAccessKey: k.secretAccessKey },
    };
  }

  /** The task stopped: its endpoint answers 404 and STS refuses every key it was given. */
  revoke(taskId: string): void {
    const task = this.tasks.get(taskId);
    if (task !== undefined) task.stopped = true;
  }

  private newKey(taskId: string): KeyEntry {
    let accessKeyId: string;
    do accessKeyId = `ASIA${upperAlnum(16)}`;
    while (this.keys.has(accessKeyId));
    const key: KeyEntry = {
      taskId,
      accessKeyId,
      secretAccessKey: randomBytes(30).toString('base64'),
      sessionToken: randomBytes(384).toString('base64url'),
      // Whole seconds: the Expiration field carries no fraction.
      expiresAt: Math.floor((this.now() + this.lifetimeMs) / 1000) * 1000,
    };
    this.keys.set(accessKeyId, key);
    return key;
  }
}

/** The environment the host gives a task so its SDK finds the endpoint, as the ECS agent does. */
export function containerCredentialsEnv(
  hostUrl: string,
  taskId: string,
  authorizationToken: string,
): Record<string, string> {
  return {
    AWS_CONTAINER_CREDENTIALS_FULL_URI: `${hostUrl}${CREDENTIALS_PATH}${taskId}`,
    AWS_CONTAINER_AUTHORIZATION_TOKEN: authorizationToken,
  };
}

/** The endpoint's route; the task id follows. */
export const CREDENTIALS_PATH = '/switchyard/credentials/';
