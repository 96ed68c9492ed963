import { AgentEventSchema, type AgentEvent, type UserMessage } from '@switchyard/protocol';
import { freshMeta, type Meta } from './lifecycle.ts';
import type { TranscriptEntry } from './types.ts';
import { nextUlid, ulidTime } from './ulid.ts';
import { REPLAY_PAGE_BYTES, REPLAY_PAGE_EVENTS, type StoredEvent } from './viewer-frames.ts';

// A session hub's SQLite storage: the lifecycle record (one JSON row), the event log, the
// messages the hub accepted (for clientMessageId dedupe and redelivery), and the sequence
// ledger (the highest seq stored per runner id). Every event is written here before it is
// broadcast or acked.

const utf8 = new TextEncoder();

export type LogItem = { event: AgentEvent; messageId?: string | undefined };

/**
 * What an append's `also` did to meta: 'changed' saves meta in the append's transaction (as an
 * append without `also` does); 'log-only' means meta changed only in what `loadMeta` recovers
 * from the log itself (lastEventId, logBytes, lastActivityAt), so its row is not rewritten. A
 * streamed delta's frame is the common case: one row fewer written per frame.
 */
export type MetaTouch = 'changed' | 'log-only';

export class EventLog {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
    this.ensureSchema();
  }

  ensureSchema(): void {
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, type TEXT NOT NULL, message_id TEXT, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, client_id TEXT UNIQUE, body TEXT NOT NULL, created_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS runner_seqs (runner_id TEXT PRIMARY KEY, acked_seq INTEGER NOT NULL);
    `);
  }

  /** Meta as saved, brought up to the log's last event (appends need not rewrite it: `MetaTouch`). */
  loadMeta(): Meta {
    const row = this.#sql.exec<{ v: string }>('SELECT v FROM meta WHERE k = ?', 'hub').toArray()[0];
    const saved = row === undefined ? freshMeta() : { ...freshMeta(), ...(JSON.parse(row.v) as Partial<Meta>) };
    // Events after the saved lastEventId were appended without a meta save: their bytes, the
    // last id, and its time as the last activity (ids are ULIDs of the hub's clock at the append).
    const tail = this.#sql
      .exec<{ last: string | null; bytes: number | null }>(
        'SELECT max(id) AS last, sum(length(CAST(data AS BLOB))) AS bytes FROM events WHERE id > ?',
        saved.lastEventId ?? '',
      )
      .one();
    if (tail.last === null) return saved;
    return {
      ...saved,
      lastEventId: tail.last,
      logBytes: (saved.logBytes ?? 0) + (tail.bytes ?? 0),
      lastActivityAt: Math.max(saved.lastActivityAt, ulidTime(tail.last)),
    };
  }

  saveMeta(meta: Meta): void {
    this.#sql.exec(
      'INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v',
      'hub',
      JSON.stringify(meta),
    );
  }

  transaction(fn: () => void): void {
    this.#storage.transactionSync(fn);
  }

  /**
   * Appends events with ids after `meta.lastEventId`, counts their bytes into `meta.logBytes`,
   * runs `also` and saves meta unless `also` says 'log-only', all in one transaction. On a throw
   * the disk is rolled back but `meta` is not: the caller reloads it.
   */
  append(meta: Meta, items: LogItem[], now: number, also?: () => MetaTouch): StoredEvent[] {
    const stored: StoredEvent[] = [];
    this.transaction(() => {
      let last = meta.lastEventId;
      for (const { event, messageId } of items) {
        const id = nextUlid(now, last);
        last = id;
        const body = messageId !== undefined && !('messageId' in event) ? { ...event, messageId } : event;
        const data = JSON.stringify(body);
        this.#sql.exec(
          'INSERT INTO events (id, type, message_id, data) VALUES (?, ?, ?, ?)',
          id,
          event.type,
          messageId ?? null,
          data,
        );
        stored.push({ id, type: event.type, data });
        meta.logBytes = (meta.logBytes ?? 0) + utf8.encode(data).byteLength;
      }
      meta.lastEventId = last;
      if (also?.() !== 'log-only') this.saveMeta(meta);
    });
    return stored;
  }

  /**
   * One replay page after `after`: at most REPLAY_PAGE_EVENTS events or REPLAY_PAGE_BYTES of
   * event JSON (at least one event), and whether more follow.
   */
  replayPage(after: string | null): { events: StoredEvent[]; more: boolean } {
    const events: StoredEvent[] = [];
    let bytes = 0;
    const cursor = this.#sql.exec<{ id: string; type: string; data: string }>(
      'SELECT id, type, data FROM events WHERE id > ? ORDER BY id LIMIT ?',
      after ?? '',
      REPLAY_PAGE_EVENTS + 1,
    );
    for (const row of cursor) {
      if (events.length >= REPLAY_PAGE_EVENTS || (events.length > 0 && bytes + row.data.length > REPLAY_PAGE_BYTES)) {
        return { events, more: true };
      }
      events.push({ id: row.id, type: row.type, data: row.data });
      bytes += row.data.length;
    }
    return { events, more: false };
  }

  /** One page of the conversation built from the log; `nextCursor` is null on the last. */
  transcriptPage(after: string | null, limit: number): { messages: TranscriptEntry[]; nextCursor: string | null } {
    const rows = this.#sql
      .exec<{ id: string; message_id: string | null; data: string }>(
        "SELECT id, message_id, data FROM events WHERE type IN ('message.user', 'message.assistant', 'tool.result', 'turn.done') AND id > ? ORDER BY id LIMIT ?",
        after ?? '',
        limit + 1,
      )
      .toArray();
    const more = rows.length > limit;
    if (more) rows.length = limit;
    const messages: TranscriptEntry[] = [];
    for (const row of rows) {
      const parsed = AgentEventSchema.safeParse(JSON.parse(row.data));
      if (!parsed.success) continue;
      const e = parsed.data;
      const messageId = row.message_id;
      if (e.type === 'message.user')
        messages.push({ role: 'user', eventId: row.id, messageId: e.messageId, text: e.text });
      else if (e.type === 'message.assistant')
        messages.push({ role: 'assistant', eventId: row.id, messageId, content: e.content });
      else if (e.type === 'tool.result') {
        messages.push({
          role: 'tool',
          eventId: row.id,
          messageId,
          toolId: e.toolId,
          isError: e.isError,
          output: e.output,
        });
      } else if (e.type === 'turn.done') {
        messages.push({
          role: 'turn',
          eventId: row.id,
          messageId,
          stopReason: e.stopReason,
          ...(e.error !== undefined && { error: { code: e.error.code, message: e.error.message } }),
        });
      }
    }
    return { messages, nextCursor: more ? (rows.at(-1)?.id ?? null) : null };
  }

  // Messages: kept for the session's life so a clientMessageId is answered the same way again.

  messageIdForClientId(clientId: string): string | null {
    return (
      this.#sql.exec<{ id: string }>('SELECT id FROM messages WHERE client_id = ?', clientId).toArray()[0]?.id ?? null
    );
  }

  addMessage(id: string, clientId: string | null, message: UserMessage, now: number): void {
    this.#sql.exec(
      'INSERT INTO messages (id, client_id, body, created_at) VALUES (?, ?, ?, ?)',
      id,
      clientId,
      JSON.stringify(message),
      now,
    );
  }

  messageBody(id: string): UserMessage | null {
    const row = this.#sql.exec<{ body: string }>('SELECT body FROM messages WHERE id = ?', id).toArray()[0];
    return row === undefined ? null : (JSON.parse(row.body) as UserMessage);
  }

  /** A message nobody accepted is forgotten, so its clientMessageId can be sent again. */
  forgetMessage(id: string): void {
    this.#sql.exec('DELETE FROM messages WHERE id = ?', id);
  }

  // The sequence ledger: the highest seq stored per runner id.

  /** Null for a runner id the hub has never seen. */
  heldSeqOrNull(runnerId: string): number | null {
    return (
      this.#sql
        .exec<{ acked_seq: number }>('SELECT acked_seq FROM runner_seqs WHERE runner_id = ?', runnerId)
        .toArray()[0]?.acked_seq ?? null
    );
  }

  heldSeq(runnerId: string): number {
    return this.heldSeqOrNull(runnerId) ?? 0;
  }

  addRunner(runnerId: string): void {
    this.#sql.exec('INSERT INTO runner_seqs (runner_id, acked_seq) VALUES (?, 0)', runnerId);
  }

  setHeldSeq(runnerId: string, seq: number): void {
    this.#sql.exec('UPDATE runner_seqs SET acked_seq = ? WHERE runner_id = ?', seq, runnerId);
  }

  /** Deletes everything, leaving an empty schema. */
  async clear(): Promise<void> {
    await this.#storage.deleteAll();
    this.ensureSchema();
  }
}
