import {
  signRunnerIdentity,
  type IdentityEndpoint,
  type RunnerIdentityProof,
  type TaskCredentials,
} from '@switchyard/protocol';
import { z } from 'zod';
import { httpRequest } from '../http-request.ts';

// The runner's proof of which task it is (docs/DESIGN.md "Runner identity"): its task role's
// credentials, from the container credentials endpoint ECS runs for every task (the local runner
// host serves the same), sign the GetCallerIdentity request the edge sends to STS. Not the SDK's
// credentials provider: this is one GET and a schema, and the SDK's module graph would load into
// every runner before its CLI starts.

/** Where the credentials come from: ECS's AWS_CONTAINER_CREDENTIALS_* variables, resolved. */
export interface CredentialsSource {
  url: string;
  /** AWS_CONTAINER_AUTHORIZATION_TOKEN, sent as the Authorization header when set. */
  authorization: string | undefined;
}

/** A runner's identity settings (config.ts): where the proof goes, and where its credentials are. */
export interface IdentityConfig {
  endpoint: IdentityEndpoint;
  credentials: CredentialsSource;
}

const ContainerCredentialsSchema = z.object({
  AccessKeyId: z.string().min(1),
  SecretAccessKey: z.string().min(1),
  Token: z.string().min(1).optional(),
  Expiration: z.iso.datetime({ offset: true }).optional(),
});

/** The endpoint is on the task's own network (link-local or loopback): seconds mean it is not there. */
const FETCH_TIMEOUT_MS = 5_000;
/** Fetched again this long before they expire (ECS rotates them well ahead of that). */
const REFRESH_AHEAD_MS = 5 * 60_000;

type Held = { value: TaskCredentials; refreshAt: number };

/** What a link needs to prove the task: the hub link in each hello, the pool link in its upgrade. */
export interface IdentityProver {
  prove(): Promise<RunnerIdentityProof>;
}

/** Signs proofs for one runner id; credentials are fetched once and again near their expiry. */
export class TaskIdentity implements IdentityProver {
  readonly #endpoint: IdentityEndpoint;
  readonly #source: CredentialsSource;
  readonly #runnerId: string;
  #credentials: Promise<Held> | undefined;

  constructor(endpoint: IdentityEndpoint, source: CredentialsSource, runnerId: string) {
    this.#endpoint = endpoint;
    this.#source = source;
    this.#runnerId = runnerId;
  }

  /** A fresh proof (SigV4 dates are good for minutes, so one per hello). */
  async prove(): Promise<RunnerIdentityProof> {
    // A failed fetch is not kept: the next hello fetches again.
    let held = await this.#credentials?.catch(() => undefined);
    if (held === undefined || held.refreshAt <= Date.now()) {
      const fetching = this.#fetch();
      this.#credentials = fetching;
      held = await fetching;
    }
    return signRunnerIdentity(this.#endpoint, this.#runnerId, held.value);
  }

  async #fetch(): Promise<Held> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#source.authorization !== undefined) headers.authorization = this.#source.authorization;
    const answer = await httpRequest('GET', this.#source.url, headers, undefined, FETCH_TIMEOUT_MS);
    if (answer.status !== 200) throw new Error(`the container credentials endpoint answered ${answer.status}`);
    let json: unknown;
    try {
      json = JSON.parse(answer.body.toString('utf8'));
    } catch {
      throw new Error('the container credentials endpoint answered with something other than JSON');
    }
    const parsed = ContainerCredentialsSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `the container credentials are not usable: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`,
      );
    }
    const c = parsed.data;
    const expires = c.Expiration === undefined ? Number.POSITIVE_INFINITY : Date.parse(c.Expiration);
    return {
      value: {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        ...(c.Token !== undefined && { sessionToken: c.Token }),
      },
      refreshAt: expires - REFRESH_AHEAD_MS,
    };
  }
}

/** The prover a runner's config asks for, or undefined when its launch wants no proof. */
export function taskIdentityOf(config: {
  runnerId: string;
  identity: IdentityConfig | undefined;
}): TaskIdentity | undefined {
  return config.identity === undefined
    ? undefined
    : new TaskIdentity(config.identity.endpoint, config.identity.credentials, config.runnerId);
}
