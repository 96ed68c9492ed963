import type { Backend } from '@switchyard/protocol';
import type { PoolSizes } from '@switchyard/protocol/pool';

// The warm runner pool's decisions (docs/DESIGN.md "Warm runner pool"): what to launch, what to
// retire, which idle runner a session gets, when to look again. Pure: inputs in, decisions out,
// no clock and no I/O; the coordinator (coordinator.ts) keeps the records and carries them out.

export interface PooledRunner {
  /** The runner id (SWITCHYARD_RUNNER_ID) and the pool token's scope. */
  id: string;
  backend: Backend;
  model: string | null;
  /** The launcher's reference (task ARN); null until the launcher answered. */
  ref: string | null;
  launchedAt: number;
  /** `launching`: started, not yet said pool_hello; `idle`: CLI up, link open, claimable. */
  state: 'launching' | 'idle';
}

export interface PoolTarget {
  sizes: PoolSizes;
  /** Only the backend new sessions get keeps a pool: a switch drains the other one. */
  llmBackend: Backend;
  /** settings.defaultModel: a pooled CLI started with another model cannot serve new sessions. */
  models: Record<Backend, string | null>;
  /** A pooled runner idle this long is replaced (fresh image, fresh CLI, bounded exposure). */
  maxAgeMs: number;
  /** A launched runner that has not said pool_hello within this is given up. */
  connectTimeoutMs: number;
}

export type RetireReason = 'drained' | 'model_changed' | 'aged' | 'never_connected' | 'over_size';

export interface PoolPlan {
  launch: Array<{ backend: Backend; model: string | null }>;
  retire: Array<{ id: string; reason: RetireReason }>;
}

export function targetSize(target: PoolTarget, backend: Backend): number {
  return backend === target.llmBackend ? target.sizes[backend] : 0;
}

/**
 * An idle runner past the age limit is replaced, not dropped: it stays (and may still be claimed)
 * until a fresh one is idle in its place, so ageing never empties a slot for a provisioning time.
 * Past the limit plus one connect timeout (its replacement never came) it goes regardless.
 */
function hardAgeMs(target: PoolTarget): number {
  return target.maxAgeMs + target.connectTimeoutMs;
}

function isAged(r: PooledRunner, target: PoolTarget, now: number): boolean {
  return r.state === 'idle' && now - r.launchedAt >= target.maxAgeMs;
}

function expired(r: PooledRunner, target: PoolTarget, now: number): RetireReason | null {
  if (targetSize(target, r.backend) === 0) return 'drained';
  if (r.model !== target.models[r.backend]) return 'model_changed';
  if (r.state === 'idle' && now - r.launchedAt >= hardAgeMs(target)) return 'aged';
  if (r.state === 'launching' && now - r.launchedAt >= target.connectTimeoutMs) return 'never_connected';
  return null;
}

/** What brings the pool to its target now: retire the unwanted, launch the missing. */
export function planPool(runners: readonly PooledRunner[], target: PoolTarget, now: number): PoolPlan {
  const retire: PoolPlan['retire'] = [];
  const kept = new Map<Backend, PooledRunner[]>();
  for (const r of runners) {
    const why = expired(r, target, now);
    if (why !== null) retire.push({ id: r.id, reason: why });
    else kept.set(r.backend, [...(kept.get(r.backend) ?? []), r]);
  }
  const launch: PoolPlan['launch'] = [];
  for (const backend of Object.keys(target.sizes) as Backend[]) {
    const size = targetSize(target, backend);
    const mine = [...(kept.get(backend) ?? [])].sort((a, b) => a.launchedAt - b.launchedAt);
    const fresh = mine.filter((r) => !isAged(r, target, now));
    const aged = mine.filter((r) => isAged(r, target, now));
    // Over size (the setting was lowered): the youngest go first, so the oldest are claimed first.
    for (const r of fresh.slice(size)) retire.push({ id: r.id, reason: 'over_size' });
    for (let i = fresh.length; i < size; i++) launch.push({ backend, model: target.models[backend] });
    // Aged runners stand in only for fresh ones not yet idle; the oldest leave first.
    const freshIdle = fresh.slice(0, size).filter((r) => r.state === 'idle').length;
    const standIns = Math.max(0, size - freshIdle);
    for (const r of aged.slice(0, Math.max(0, aged.length - standIns))) retire.push({ id: r.id, reason: 'aged' });
  }
  return { launch, retire };
}

export interface ClaimWant {
  backend: Backend;
  model: string | null;
}

/**
 * The idle runner a session gets: same backend and model, not retired, the oldest first (it is
 * the next to age out; an aged one waiting for its replacement goes before a fresh one). Null: launch cold. The caller removes it from the pool in the same
 * synchronous step; that is what makes a claim atomic.
 */
export function pickForClaim(
  runners: readonly PooledRunner[],
  want: ClaimWant,
  target: PoolTarget,
  now: number,
): PooledRunner | null {
  let best: PooledRunner | null = null;
  for (const r of runners) {
    if (r.state !== 'idle' || r.backend !== want.backend || r.model !== want.model) continue;
    if (expired(r, target, now) !== null) continue;
    if (best === null || r.launchedAt < best.launchedAt) best = r;
  }
  return best;
}

/** When the pool must be looked at again without an outside event (an age or a connect deadline). */
export function nextPoolDeadline(runners: readonly PooledRunner[], target: PoolTarget, now: number): number | null {
  let next: number | null = null;
  for (const r of runners) {
    const age =
      r.state === 'launching' ? target.connectTimeoutMs : isAged(r, target, now) ? hardAgeMs(target) : target.maxAgeMs;
    const at = r.launchedAt + age;
    if (next === null || at < next) next = at;
  }
  return next;
}
