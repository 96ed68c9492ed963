import type {
  WorkspaceBaseline,
  WorkspaceCommit,
  WorkspaceCommitResult,
  WorkspaceLimits,
  WorkspaceManifest,
} from '@switchyard/protocol';
import type { HubCore } from '../hub/hub-core.ts';
import { sweepBlobs } from './blobs.ts';
import { type BaselineEntry, WorkspaceLedger } from './ledger.ts';
import { type BlobLocation, type PackedBlob, PackIndex } from './pack-index.ts';
import { sweepPacks } from './packs.ts';

// What the session hub does for the durable workspace: hand out the manifest, apply commits one
// at a time (the Durable Object serializes them), announce each as `workspace.saved`, and tell a
// live runner when someone else (the Files API) changed the durable copy.

export type WorkspaceResult<T> =
  | { ok: true; value: T }
  | { ok: false; status: 401 | 404 | 409 | 413; code: WorkspaceErrorCode; message: string; field?: string };

export type WorkspaceErrorCode = 'unauthenticated' | 'not_found' | 'conflict' | 'baseline_exists' | 'payload_too_large';

/** What the diff compares: the baseline's files and the current ones (diff.ts reads the blobs). */
export interface WorkspaceDiffInputs {
  baseline: WorkspaceBaseline | null;
  before: BaselineEntry[];
  after: BaselineEntry[];
}

/** Who commits: a person through the Files API, or the runner of the current launch. */
export type WorkspaceWriter = { kind: 'user' } | { kind: 'runner'; launchId: string; runnerId: string };

/** Every this many commits, blobs nothing points at are swept. */
const SWEEP_EVERY = 10;
const SWEEP_MIN_AGE_MS = 60 * 60_000;

export class HubWorkspace {
  readonly ledger: WorkspaceLedger;
  readonly packs: PackIndex;
  readonly #hub: HubCore;

  constructor(hub: HubCore) {
    this.#hub = hub;
    this.ledger = new WorkspaceLedger(hub.ctx.storage);
    this.packs = new PackIndex(hub.ctx.storage);
  }

  /** Records where a stored pack's blobs sit (packs.ts); their upload time is now. */
  blobsPacked(pack: string, blobs: PackedBlob[]): void {
    this.packs.add(pack, blobs, this.#hub.now);
  }

  /** Where each of `shas` is packed; one not in the map is its own R2 object, if stored at all. */
  locateBlobs(shas: string[]): Map<string, BlobLocation> {
    return this.packs.locate(shas);
  }

  /** A runner may use the workspace only while it is the current launch's welcomed runner. */
  runnerAllowed(launchId: string, runnerId: string): boolean {
    const launch = this.#hub.meta.launch;
    return launch !== null && launch.id === launchId && launch.runnerId === runnerId;
  }

  /**
   * The repository commit the workspace started from, once the runner's clone is committed; null
   * before that, and always for a session started without a repository.
   */
  baseline(): WorkspaceBaseline | null {
    return this.ledger.baseline();
  }

  diffInputs(): WorkspaceResult<WorkspaceDiffInputs> {
    if (this.#hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return {
      ok: true,
      value: { baseline: this.ledger.baseline(), before: this.ledger.baselineFiles(), after: this.ledger.files() },
    };
  }

  manifest(limits: WorkspaceLimits): WorkspaceResult<WorkspaceManifest> {
    if (this.#hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    return { ok: true, value: { generation: this.ledger.generation, files: this.ledger.files(), limits } };
  }

  commit(
    commit: WorkspaceCommit,
    from: WorkspaceWriter,
    limits: WorkspaceLimits,
    /** `dryRun`: only whether it would be taken (nothing changes, nobody is told). */
    o: { dryRun?: boolean } = {},
  ): WorkspaceResult<WorkspaceCommitResult> {
    if (this.#hub.meta.session === null)
      return { ok: false, status: 404, code: 'not_found', message: 'no such session' };
    // Only the runner's clone sets the starting point; a person's write never does.
    if (from.kind === 'user' && commit.baseline !== undefined)
      return {
        ok: false,
        status: 409,
        code: 'conflict',
        field: 'baseline',
        message: 'baseline: only the runner sets one',
      };
    if (from.kind === 'runner' && !this.runnerAllowed(from.launchId, from.runnerId)) {
      return {
        ok: false,
        status: 401,
        code: 'unauthenticated',
        message: 'this runner is not the session’s current runner',
      };
    }
    const applied = this.ledger.apply(commit, limits, o);
    if (!applied.ok) {
      const { status, field, message, baselineExists } = applied.error;
      const code = status === 413 ? 'payload_too_large' : baselineExists ? 'baseline_exists' : 'conflict';
      return { ok: false, status, code, field, message };
    }
    if (o.dryRun === true) return applied;
    this.#hub.emit({ type: 'workspace.saved', files: applied.value.files, bytes: applied.value.bytes });
    if (applied.value.generation % SWEEP_EVERY === 0) this.#sweep();
    if (from.kind === 'user') {
      // The runner holds the workspace the agent works in: it fetches the change now, so the
      // agent sees it on its next tool call. A runner whose link is down catches up at its next
      // save (it compares generations).
      const ws = this.#hub.meta.launch?.stoppingSince == null ? this.#hub.liveRunner() : undefined;
      if (ws !== undefined) this.#hub.sendTo(ws, { type: 'workspace_sync', generation: applied.value.generation });
    }
    return applied;
  }

  /**
   * Deletes blobs no file points at any more (contents overwritten or deleted), in the background.
   * Only blobs older than SWEEP_MIN_AGE_MS go: a younger one may be uploaded for a commit still
   * on its way (putBlob refreshes the upload time of content it sees again; a pack is always new).
   */
  #sweep(): void {
    const session = this.#hub.meta.session;
    if (session === null) return;
    const keep = this.ledger.liveBlobs();
    const before = this.#hub.now - SWEEP_MIN_AGE_MS;
    // A pack goes once no row names it: its live blobs keep it whole (see DESIGN "Workspaces").
    const packsInUse = this.packs.sweep(keep, before);
    const bucket = this.#hub.env.TRANSCRIPTS;
    Promise.all([
      sweepBlobs(bucket, session.id, keep, before),
      sweepPacks(bucket, session.id, packsInUse, before),
    ]).catch((err) =>
      console.error('session hub: workspace blob sweep failed:', err instanceof Error ? err.message : String(err)),
    );
  }

  /** Forgets the manifest and deletes every blob (the session is being deleted). */
  async destroy(bucket: R2Bucket, sessionId: string): Promise<void> {
    this.ledger.clear();
    this.packs.clear();
    await sweepBlobs(bucket, sessionId, new Set());
    await sweepPacks(bucket, sessionId, new Set());
  }
}
