import { DurableObject } from 'cloudflare:workers';
import {
  decodeProofHeader,
  RUNNER_LINK_PING,
  RUNNER_LINK_PONG,
  RUNNER_PROOF_HEADER,
  type Backend,
} from '@switchyard/protocol';
import {
  POOL_CLAIM_MAX_BYTES,
  PoolCloseCode,
  PoolHelloSchema,
  PoolSizesSchema,
  type PoolClaim,
  type PoolSizes,
} from '@switchyard/protocol/pool';
import { hubRuntime } from '../hub/runtime.ts';
import { nextUlid } from '../hub/ulid.ts';
import { MIN_SECRET_LENGTH, mintRunnerToken } from '../runner-link/token.ts';
import { readSettings } from '../settings/store.ts';
import { nextPoolDeadline, pickForClaim, planPool, type PooledRunner, type PoolTarget } from './plan.ts';
import { POOL_TOKEN_SCOPE, poolMaxAgeMs, poolUrlFrom } from './config.ts';
import { runnerHubUrl } from '../runner-link/hub-url.ts';
import { repositoryAllowLoopback } from '../sessions/repository-policy.ts';

// The warm runner pool's coordinator (docs/DESIGN.md "Warm runner pool"): one Durable Object per
// deployment (name "pool"). It keeps the pooled runners' records and their sockets, launches and
// retires them by the rules in plan.ts, and hands one to a session hub on `claim`. Every claim
// runs inside this one object, and the pick and the removal happen in one synchronous step, so
// two sessions can never get the same runner.

const SIZES_KEY = 'sizes';
const RUNNERS_KEY = 'runners';
const POOL_URL_KEY = 'poolUrl';
/** Even with no deadline due, a pool that should hold runners is looked at this often (lost launches). */
const RECHECK_MS = 30_000;
/** After a failed look (D1 unreachable) the next is at least this far off, even with a deadline past. */
const RETRY_AFTER_FAILURE_MS = 5_000;
/**
 * A claim's refill waits this long, so the claimed runner's link and first answer do not share
 * the edge's thread with the refill's launch (a RunTask, its signing, the records). Against a
 * launch that takes 20–90 s to provision, the pool is short a runner a little longer.
 */
export const REFILL_AFTER_CLAIM_MS = 2_000;

export interface PoolStatus {
  sizes: PoolSizes;
  runners: Array<Pick<PooledRunner, 'id' | 'backend' | 'model' | 'ref' | 'launchedAt' | 'state'>>;
}

export interface ClaimRequest {
  backend: Backend;
  model: string | null;
  sessionId: string;
  hubUrl: string;
  /** The session launch's bootstrap token; the runner dials the hub with it. */
  runnerToken: string;
  /** The session's first message, to ride along with the claim if the frame stays small enough. */
  first?: PoolClaim['first'];
}

export interface ClaimResult {
  runnerId: string;
  /** The launcher's reference of the pooled task: from now on the session's launch ref. */
  ref: string;
  /** The first message went with the claim: the runner has it (the hub counts it as sent). */
  firstSent: boolean;
}

const utf8 = new TextEncoder();

/** The claim frame, with the first message when the whole frame stays within POOL_CLAIM_MAX_BYTES. */
export function claimFrame(request: ClaimRequest): { text: string; firstSent: boolean } {
  const frame: PoolClaim = {
    type: 'claim',
    sessionId: request.sessionId,
    hubUrl: request.hubUrl,
    runnerToken: request.runnerToken,
  };
  if (request.first !== undefined) {
    const text = JSON.stringify({ ...frame, first: request.first });
    if (utf8.encode(text).byteLength <= POOL_CLAIM_MAX_BYTES) return { text, firstSent: true };
  }
  return { text: JSON.stringify(frame), firstSent: false };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class PoolCoordinator extends DurableObject<Env> {
  #sizes: PoolSizes = { claude: 0, pi: 0 };
  #runners = new Map<string, PooledRunner>();
  #poolUrl: string | null = null;
  /** The target of the last plan; a claim needs only its age limit (backend and model come from the claim). */
  #lastTarget: PoolTarget | null = null;
  /** When the refill after the earliest claim not yet refilled is due (the injectable clock's time). */
  #refillDue: number | null = null;
  /** Pooled runners whose launcher start is running in this instance: a hello may come before it answers. */
  readonly #starting = new Map<string, Promise<void>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(RUNNER_LINK_PING, RUNNER_LINK_PONG));
    void ctx.blockConcurrencyWhile(async () => {
      const sizes = PoolSizesSchema.safeParse(await ctx.storage.get(SIZES_KEY));
      if (sizes.success) this.#sizes = sizes.data;
      const runners = (await ctx.storage.get<PooledRunner[]>(RUNNERS_KEY)) ?? [];
      for (const r of runners) this.#runners.set(r.id, r);
      this.#poolUrl = (await ctx.storage.get<string>(POOL_URL_KEY)) ?? null;
      // A restart (deploy, crash) drops the pool links without a webSocketClose, and their runners
      // exit. After hibernation the links are still here, so only a real loss is dropped; its
      // replacement is launched at once rather than at the next recheck.
      if (this.#dropLost() > 0) {
        await this.#persist();
        await ctx.storage.setAlarm(Date.now());
      }
    });
  }

  // ------------------------------------------------------------------ RPC from the Worker and hubs

  async status(): Promise<PoolStatus> {
    return {
      sizes: { ...this.#sizes },
      runners: [...this.#runners.values()].map(({ id, backend, model, ref, launchedAt, state }) => ({
        id,
        backend,
        model,
        ref,
        launchedAt,
        state,
      })),
    };
  }

  /**
   * The admin setting; 0 for a backend retires its pooled runners. The patch is merged here, in
   * one synchronous step, so `before` is exactly what this change replaced even when two admins
   * change the pool at once (what the audit entry records).
   */
  async setSizes(patch: Partial<PoolSizes>, poolUrl: string): Promise<{ before: PoolSizes; status: PoolStatus }> {
    const before = { ...this.#sizes };
    this.#sizes = PoolSizesSchema.parse({ ...before, ...patch });
    this.#rememberUrl(poolUrl);
    await this.ctx.storage.put(SIZES_KEY, this.#sizes);
    await this.#reconcile();
    return { before, status: await this.status() };
  }

  /** Look at the pool now (settings changed: backend switch, default model, limits). */
  async poke(poolUrl: string | null): Promise<void> {
    if (poolUrl !== null) this.#rememberUrl(poolUrl);
    await this.#reconcile();
  }

  /**
   * Hands an idle pooled runner of this backend and model to a session, or null (launch cold).
   * The pick, the removal from the pool and the claim frame happen without an await between
   * them: this object runs one event at a time, so no other claim can see the runner in between.
   */
  async claim(request: ClaimRequest): Promise<ClaimResult | null> {
    if (this.#sizes.claude === 0 && this.#sizes.pi === 0 && this.#runners.size === 0) return null;
    // No settings read on the claim path (it is on a first message's way): a stale llmBackend or
    // model cannot mislead a claim, which matches the session's own backend and model.
    const target = { ...(this.#lastTarget ?? (await this.#target()).target), sizes: this.#sizes };
    const now = hubRuntime().clock();
    const runners = [...this.#runners.values()];
    for (;;) {
      const picked = pickForClaim(runners, request, target, now);
      if (picked === null) break;
      runners.splice(runners.indexOf(picked), 1);
      this.#runners.delete(picked.id);
      const ws = this.#socketOf(picked.id);
      if (ws === undefined || picked.ref === null) {
        // Its link is gone (closing right now): not a runner to hand out.
        if (picked.ref !== null) this.#stopTask(picked.ref, 'pooled runner lost its link');
        continue;
      }
      const frame = claimFrame(request);
      try {
        ws.send(frame.text);
        ws.close(PoolCloseCode.claimed, 'claimed');
      } catch {
        this.#stopTask(picked.ref, 'pooled runner lost its link');
        continue;
      }
      // A burst of claims keeps the earliest due time: the refill is never put off further.
      this.#refillDue ??= now + REFILL_AFTER_CLAIM_MS;
      this.ctx.waitUntil(this.#persist().then(() => this.#arm(target)));
      return { runnerId: picked.id, ref: picked.ref, firstSent: frame.firstSent };
    }
    this.ctx.waitUntil(this.#reconcile());
    return null;
  }

  // ------------------------------------------------------------------ the pooled runners' sockets

  override async fetch(request: Request): Promise<Response> {
    const runnerId = request.headers.get('X-Switchyard-Pool-Runner') ?? '';
    const runner = this.#runners.get(runnerId);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    const refuse = (reason: string, code: number = PoolCloseCode.unauthorized) => {
      server.accept();
      server.close(code, reason.slice(0, 120));
      return new Response(null, { status: 101, webSocket: client });
    };
    const expected = () =>
      this.#runners.get(runnerId) === runner && runner?.state === 'launching' && this.#socketOf(runnerId) === undefined;
    // Unknown (retired, claimed, never launched here) or already linked once: one link per runner.
    if (runner === undefined || !expected()) return refuse('this pooled runner is not expected');
    // The pool token rode in the launch request: the link proves it is the task launched here
    // before it gets a socket (docs/DESIGN.md "Runner identity"). A refused link costs the pooled
    // runner nothing: whoever read the token cannot take its one link or make it replaced.
    if (runner.ref === null) await this.#starting.get(runnerId);
    const proof = decodeProofHeader(request.headers.get(RUNNER_PROOF_HEADER));
    const verdict =
      runner.ref === null ? null : await hubRuntime().launcherFor(this.env).verifyRunner(runner.ref, runnerId, proof);
    if (verdict === null || !verdict.ok) {
      const why = verdict === null ? 'this pooled runner has no task' : verdict.error.message;
      console.warn('pool coordinator: runner identity refused:', why);
      // A check that could not be made (STS down or throttled) is no verdict on the runner: it
      // dials again, rather than leave the pool and cost a replacement's launch.
      return refuse(why, verdict?.error.retryable === true ? PoolCloseCode.tryAgainLater : PoolCloseCode.unauthorized);
    }
    if (!expected()) return refuse('this pooled runner is not expected');
    this.ctx.acceptWebSocket(server, [runnerId]);
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const runnerId = this.ctx.getTags(ws)[0] ?? '';
    const runner = this.#runners.get(runnerId);
    let parsed: unknown;
    try {
      parsed = typeof message === 'string' ? JSON.parse(message) : undefined;
    } catch {
      parsed = undefined;
    }
    const hello = PoolHelloSchema.safeParse(parsed);
    if (runner === undefined || !hello.success || hello.data.runnerId !== runnerId || runner.state !== 'launching') {
      ws.close(PoolCloseCode.protocolError, 'expected one pool_hello naming this runner');
      return;
    }
    if (hello.data.backend !== runner.backend || hello.data.model !== runner.model) {
      ws.close(PoolCloseCode.protocolError, 'pool_hello names another backend or model than the launch');
      return;
    }
    if (hello.data.capabilities.guard !== 'loaded') {
      // A runner that will never start a CLI is no warm runner.
      ws.close(PoolCloseCode.retired, 'the guard is not loaded');
      return;
    }
    runner.state = 'idle';
    await this.#persist();
  }

  override async webSocketClose(ws: WebSocket): Promise<void> {
    await this.#forgetSocket(ws, 'pooled runner closed its link');
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.#forgetSocket(ws, 'pooled runner link failed');
  }

  override async alarm(): Promise<void> {
    try {
      await this.#reconcile();
    } catch (err) {
      // Nothing else may wake the pool (no claim, poke or link event): without this, aged runners
      // would outlive their hard age and lost launches would not be made up. Logged, not thrown:
      // the retry is this alarm.
      console.error('pool coordinator: alarm failed:', errorText(err));
      await this.#arm(this.#lastTarget === null ? null : { ...this.#lastTarget, sizes: this.#sizes }, true);
    }
  }

  // ------------------------------------------------------------------ internals

  async #forgetSocket(ws: WebSocket, reason: string): Promise<void> {
    const runnerId = this.ctx.getTags(ws)[0] ?? '';
    const runner = this.#runners.get(runnerId);
    if (runner === undefined) return; // claimed or retired already
    this.#runners.delete(runnerId);
    if (runner.ref !== null) this.#stopTask(runner.ref, reason);
    await this.#persist();
    await this.#reconcile();
  }

  #socketOf(runnerId: string): WebSocket | undefined {
    return this.ctx.getWebSockets(runnerId).find((ws) => ws.readyState === WebSocket.OPEN);
  }

  /**
   * Forgets every idle runner whose link is gone without a webSocketClose (the object restarted)
   * and stops its task, as a lost link does; returns how many. A `launching` one has no link yet
   * and is left to its connect deadline.
   */
  #dropLost(): number {
    let dropped = 0;
    for (const r of [...this.#runners.values()]) {
      if (r.state !== 'idle' || this.#socketOf(r.id) !== undefined) continue;
      this.#runners.delete(r.id);
      if (r.ref !== null) this.#stopTask(r.ref, 'pooled runner lost its link');
      dropped++;
    }
    return dropped;
  }

  #rememberUrl(poolUrl: string): void {
    if (this.#poolUrl === poolUrl) return;
    this.#poolUrl = poolUrl;
    this.ctx.waitUntil(this.ctx.storage.put(POOL_URL_KEY, poolUrl));
  }

  async #target(): Promise<{ target: PoolTarget; limits: { idleMs: number; maxLifetimeMs: number } }> {
    const { settings } = await readSettings(this.env.DB);
    const target: PoolTarget = {
      sizes: this.#sizes,
      llmBackend: settings.llmBackend,
      models: settings.defaultModel,
      maxAgeMs: poolMaxAgeMs(this.env),
      connectTimeoutMs: hubRuntime().timings(this.env).connectTimeoutMs,
    };
    this.#lastTarget = target;
    const limits = { idleMs: settings.sessionIdleMinutes * 60_000, maxLifetimeMs: settings.sessionMaxMinutes * 60_000 };
    return { target, limits };
  }

  async #reconcile(): Promise<void> {
    const { target, limits } = await this.#target();
    // Every plan refills what claims took (cleared only once there is a plan: a failed read keeps it).
    this.#refillDue = null;
    const launcher = hubRuntime().launcherFor(this.env);
    const now = hubRuntime().clock();
    // Plan and record in one synchronous step, so reconciles that interleave never double-launch.
    // Lost runners go first, so the plan counts their slots as empty and launches replacements.
    this.#dropLost();
    const plan = planPool([...this.#runners.values()], target, now);
    for (const { id, reason } of plan.retire) {
      const r = this.#runners.get(id);
      if (r === undefined) continue;
      this.#runners.delete(id);
      for (const ws of this.ctx.getWebSockets(id)) {
        try {
          ws.close(PoolCloseCode.retired, reason);
        } catch {
          // already closed
        }
      }
      if (r.ref !== null) this.#stopTask(r.ref, `pooled runner retired: ${reason}`);
    }
    const secret = this.env.RUNNER_TOKEN_SECRET ?? '';
    // A configured RUNNER_HUB_URL wins over the origin remembered from the admin's request.
    const configured = this.env.RUNNER_HUB_URL?.trim();
    const poolUrl = configured ? poolUrlFrom(runnerHubUrl(this.env, configured)) : this.#poolUrl;
    const launches: Promise<void>[] = [];
    if (launcher.startPooled !== undefined && poolUrl !== null && secret.length >= MIN_SECRET_LENGTH) {
      const startPooled = launcher.startPooled.bind(launcher);
      let last: string | null = null;
      for (const want of plan.launch) {
        const id = nextUlid(now, last);
        last = id;
        const runner: PooledRunner = {
          id,
          backend: want.backend,
          model: want.model,
          ref: null,
          launchedAt: now,
          state: 'launching',
        };
        this.#runners.set(id, runner);
        const started = (async () => {
          try {
            const poolToken = await mintRunnerToken(secret, {
              sessionId: POOL_TOKEN_SCOPE,
              launchId: id,
              expiresAt: now + target.maxAgeMs + target.connectTimeoutMs,
              kind: 'bootstrap',
            });
            const ref = await startPooled({
              poolUrl,
              poolToken,
              backend: want.backend,
              runnerId: id,
              model: want.model,
              limits,
              ...(repositoryAllowLoopback(this.env) && { repositoryAllowLoopback: true }),
            });
            if (this.#runners.get(id) === runner) runner.ref = ref;
            // Retired while the launcher answered: it must not linger.
            else this.#stopTask(ref, 'pooled runner retired while starting');
          } catch (err) {
            console.error('pool coordinator: pooled launch failed:', errorText(err));
            this.#runners.delete(id);
          }
        })();
        this.#starting.set(id, started);
        void started.finally(() => this.#starting.delete(id));
        launches.push(started);
      }
    }
    await this.#persist();
    await Promise.all(launches);
    await this.#persist();
    await this.#arm(target);
  }

  /**
   * Sets the alarm for the next deadline. After a failed look (`afterFailure`; `target` is the
   * last known one, null before the first) it is always set: at the latest the recheck, and never
   * sooner than RETRY_AFTER_FAILURE_MS, so a deadline already past does not retry straight into
   * the failure.
   */
  async #arm(target: PoolTarget | null, afterFailure = false): Promise<void> {
    const now = hubRuntime().clock();
    const due = target === null ? null : nextPoolDeadline([...this.#runners.values()], target, now);
    const wanted = afterFailure || (target !== null && target.sizes[target.llmBackend] > 0) ? now + RECHECK_MS : null;
    const times = [due, wanted, this.#refillDue].filter((t): t is number => t !== null);
    let at = times.length === 0 ? null : Math.min(...times);
    if (afterFailure && at !== null) at = Math.max(at, now + RETRY_AFTER_FAILURE_MS);
    // Deadlines are in the injectable clock's time; the alarm runs on the wall clock.
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Date.now() + Math.max(0, at - now));
  }

  #stopTask(ref: string, reason: string): void {
    this.ctx.waitUntil(
      hubRuntime()
        .launcherFor(this.env)
        .stop(ref, reason)
        .catch((err) => console.error('pool coordinator: stop failed:', errorText(err))),
    );
  }

  async #persist(): Promise<void> {
    await this.ctx.storage.put(RUNNERS_KEY, [...this.#runners.values()]);
  }
}
