import {
  ApprovalPolicySchema,
  DEFAULT_APPROVAL_POLICY,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  denyMessage,
  policyDecision,
  type AgentEvent,
  type ApprovalDecision,
  type ApprovalPolicy,
  type ApprovalReason,
  type EventOf,
} from '@switchyard/protocol';
import { z } from 'zod';
import { auditInsert } from '../audit/store.ts';
import type { HubCore } from './hub-core.ts';

// Pending tool approvals as a durable object of the session (DESIGN "Tool approvals"): a row
// per `approval.request` in the hub's SQLite, resolved once — by a person (POST), the policy,
// expiry (the alarm), an interrupt or a lost runner — with its `approval.resolved` logged and
// broadcast like every event, and the decision sent to the runner until it says it landed.

/** What the hub applies to a new request; taken from settings with each message. */
export interface ApprovalConfig {
  policy: ApprovalPolicy;
  timeoutMs: number;
}

const StoredConfigSchema = z.object({ policy: ApprovalPolicySchema, timeoutMs: z.number().int().positive() });

export const DEFAULT_APPROVAL_CONFIG: ApprovalConfig = {
  policy: DEFAULT_APPROVAL_POLICY,
  timeoutMs: DEFAULT_APPROVAL_TIMEOUT_SECONDS * 1000,
};

export interface Resolution {
  approvalId: string;
  decision: ApprovalDecision;
  reason: ApprovalReason;
  by?: string;
  message?: string;
}

export type AnswerResult =
  | { ok: true; resolution: Resolution }
  | { ok: false; status: 404 }
  | { ok: false; status: 409; resolution: Resolution };

interface Row extends Record<string, SqlStorageValue> {
  id: string;
  message_id: string | null;
  expires_at: number;
  decision: string | null;
  reason: string | null;
  by_name: string | null;
  message: string | null;
  delivered: number;
}

type Request = EventOf<'approval.request'>;
type LogItem = { event: AgentEvent; messageId?: string | undefined };

export class HubApprovals {
  readonly #hub: HubCore;

  constructor(hub: HubCore) {
    this.#hub = hub;
  }

  get #sql(): SqlStorage {
    return this.#hub.ctx.storage.sql;
  }

  /** Idempotent; called before each use because deleting a session wipes all storage. */
  #schema(): void {
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS approvals (
        id TEXT PRIMARY KEY, message_id TEXT, expires_at INTEGER NOT NULL,
        decision TEXT, reason TEXT, by_name TEXT, message TEXT, delivered INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS approval_config (k TEXT PRIMARY KEY, v TEXT NOT NULL);
    `);
  }

  setConfig(config: ApprovalConfig): void {
    this.#schema();
    this.#sql.exec(
      "INSERT INTO approval_config (k, v) VALUES ('config', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
      JSON.stringify(config),
    );
  }

  config(): ApprovalConfig {
    this.#schema();
    const row = this.#sql.exec<{ v: string }>("SELECT v FROM approval_config WHERE k = 'config'").toArray()[0];
    if (row === undefined) return DEFAULT_APPROVAL_CONFIG;
    // Stored by setConfig from validated settings; read back checked all the same.
    const parsed = StoredConfigSchema.safeParse(JSON.parse(row.v));
    return parsed.success ? parsed.data : DEFAULT_APPROVAL_CONFIG;
  }

  /**
   * A runner's events before they are stored: each new `approval.request` gets its expiry from
   * the hub's clock (the runner's is provisional). `record` runs inside the append transaction.
   */
  admit(items: LogItem[]): {
    items: LogItem[];
    record: () => void;
    requests: Array<{ req: Request; messageId?: string }>;
  } {
    // Most batches carry none: the hot path (text deltas) reads no storage here.
    if (!items.some((i) => i.event.type === 'approval.request'))
      return { items, record: () => undefined, requests: [] };
    const { timeoutMs } = this.config();
    const expiresAt = this.#hub.now + timeoutMs;
    const requests: Array<{ req: Request; messageId?: string }> = [];
    const out = items.map((item) => {
      if (item.event.type !== 'approval.request') return item;
      const req: Request = { ...item.event, expiresAt: new Date(expiresAt).toISOString() };
      requests.push({ req, ...(item.messageId !== undefined && { messageId: item.messageId }) });
      return { ...item, event: req };
    });
    const record = () => {
      for (const { req, messageId } of requests) {
        this.#sql.exec(
          'INSERT INTO approvals (id, message_id, expires_at) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING',
          req.approvalId,
          messageId ?? null,
          expiresAt,
        );
      }
    };
    return { items: out, record, requests };
  }

  /**
   * The first approval id in a runner's fresh events that was asked before (stored, or earlier in
   * the batch). The CLIs make a new id per question and a replayed frame is dropped by its seq, so
   * a repeat is a runner speaking out of turn: logged, it would show a second pending card for a
   * question already answered.
   */
  repeatedRequest(items: LogItem[]): string | undefined {
    const ids = items.flatMap((i) => (i.event.type === 'approval.request' ? [i.event.approvalId] : []));
    if (ids.length === 0) return undefined;
    this.#schema();
    const seen = new Set<string>();
    for (const id of ids) {
      if (seen.has(id) || this.#row(id) !== undefined) return id;
      seen.add(id);
    }
    return undefined;
  }

  /** After the requests are logged: the policy decides the kinds it covers, at once. */
  applyPolicy(requests: Array<{ req: Request }>): void {
    if (requests.length === 0) return;
    const { policy } = this.config();
    for (const { req } of requests) {
      const decision = policyDecision(policy, req.kind);
      if (decision !== undefined) this.resolve(req.approvalId, decision, 'policy');
    }
    this.#hub.arm();
  }

  /** A person's answer: the first decision stands (409 carries it); unknown ids are 404. */
  answer(approvalId: string, decision: ApprovalDecision, by: string, message?: string): AnswerResult {
    this.#schema();
    const row = this.#row(approvalId);
    if (row === undefined) return { ok: false, status: 404 };
    if (row.decision !== null) return { ok: false, status: 409, resolution: toResolution(row) };
    const resolution = this.resolve(approvalId, decision, 'user', by, message);
    this.#hub.arm();
    return resolution === undefined ? { ok: false, status: 404 } : { ok: true, resolution };
  }

  /**
   * Resolves one pending approval: stored, logged, broadcast, and sent to the live runner when
   * its CLI still asks. Undefined when it was not pending.
   */
  resolve(
    approvalId: string,
    decision: ApprovalDecision,
    reason: ApprovalReason,
    by?: string,
    message?: string,
  ): Resolution | undefined {
    this.#schema();
    const row = this.#row(approvalId);
    if (row === undefined || row.decision !== null) return undefined;
    // Only a CLI still asking gets the answer: an interrupt withdraws the question (claude's
    // control_cancel_request, pi's aborted confirm) and a lost runner's CLI is gone.
    const sent = reason !== 'runner_lost' && reason !== 'interrupted';
    // What the model reads for a deny; an allow carries no message.
    const text = decision === 'deny' ? denyMessage(reason, message) : undefined;
    const resolution: Resolution = {
      approvalId,
      decision,
      reason,
      ...(by !== undefined && { by }),
      ...(text !== undefined && { message: text }),
    };
    const stored = this.#hub.append(
      [{ event: { type: 'approval.resolved', ...resolution }, messageId: row.message_id ?? undefined }],
      () => {
        this.#sql.exec(
          'UPDATE approvals SET decision = ?, reason = ?, by_name = ?, message = ?, delivered = ? WHERE id = ?',
          decision,
          reason,
          by ?? null,
          text ?? null,
          sent ? 0 : 1,
          approvalId,
        );
        return 'changed';
      },
    );
    this.#hub.broadcast(stored);
    // A person's answer is audited by its route, with the person as actor; the rest here.
    if (reason !== 'user') this.#audit(resolution);
    if (sent) {
      const ws = this.#hub.liveRunner();
      if (ws !== undefined) this.#send(ws, resolution);
    }
    return resolution;
  }

  /** Every pending approval (optionally of one turn) resolves as a deny for `reason`. */
  resolveAllPending(reason: ApprovalReason, messageId?: string): void {
    this.#schema();
    const ids = this.#sql
      .exec<{ id: string; message_id: string | null }>(
        'SELECT id, message_id FROM approvals WHERE decision IS NULL ORDER BY expires_at, id',
      )
      .toArray()
      .filter((r) => messageId === undefined || r.message_id === messageId)
      .map((r) => r.id);
    for (const id of ids) this.resolve(id, 'deny', reason);
  }

  /** The alarm's part: requests nobody answered in time are denied. */
  expireDue(): void {
    this.#schema();
    const now = this.#hub.now;
    const due = this.#sql
      .exec<{ id: string }>(
        'SELECT id FROM approvals WHERE decision IS NULL AND expires_at <= ? ORDER BY expires_at, id',
        now,
      )
      .toArray();
    for (const { id } of due) this.resolve(id, 'deny', 'expired');
  }

  /** When the alarm must fire for the earliest pending expiry; null when nothing waits. */
  nextExpiry(): number | null {
    this.#schema();
    const row = this.#sql
      .exec<{ t: number | null }>('SELECT MIN(expires_at) AS t FROM approvals WHERE decision IS NULL')
      .toArray()[0];
    return row?.t ?? null;
  }

  /** After a welcome: decisions the runner has not confirmed are sent again (it drops repeats). */
  resendTo(ws: WebSocket): void {
    this.#schema();
    const rows = this.#sql
      .exec<Row>('SELECT * FROM approvals WHERE decision IS NOT NULL AND delivered = 0 ORDER BY expires_at, id')
      .toArray();
    for (const row of rows) this.#send(ws, toResolution(row));
  }

  /** The runner's `accepted` for a decision; false when the id is not an approval. */
  delivered(approvalId: string): boolean {
    this.#schema();
    this.#sql.exec('UPDATE approvals SET delivered = 1 WHERE id = ? AND decision IS NOT NULL', approvalId);
    return this.#row(approvalId) !== undefined;
  }

  #audit(r: Resolution): void {
    const session = this.#hub.meta.session;
    if (session === null) return;
    const { statement } = auditInsert(
      this.#hub.env.DB,
      {
        at: this.#hub.now,
        actor: null,
        action: 'approval.decide',
        target: `session:${session.id}`,
        before: null,
        after: { approvalId: r.approvalId, decision: r.decision, reason: r.reason, via: 'session hub' },
      },
      { onlyIfPreviousChanged: false },
    );
    this.#hub.ctx.waitUntil(
      statement.run().then(
        () => undefined,
        (err) => console.error('session hub: approval audit failed:', err instanceof Error ? err.message : String(err)),
      ),
    );
  }

  #send(ws: WebSocket, r: Resolution): void {
    this.#hub.sendTo(ws, {
      type: 'approval_decision',
      approvalId: r.approvalId,
      decision: r.decision,
      ...(r.message !== undefined && { message: r.message }),
    });
  }

  #row(id: string): Row | undefined {
    return this.#sql.exec<Row>('SELECT * FROM approvals WHERE id = ?', id).toArray()[0];
  }
}

function toResolution(row: Row): Resolution {
  return {
    approvalId: row.id,
    decision: row.decision === 'allow' ? 'allow' : 'deny',
    reason: (row.reason ?? 'user') as ApprovalReason,
    ...(row.by_name !== null && { by: row.by_name }),
    ...(row.message !== null && { message: row.message }),
  };
}
