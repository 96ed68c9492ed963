import { z } from 'zod';
import { UserMessageSchema } from './adapter.ts';
import { ApprovalDecisionFrameSchema, ApprovalModeSchema } from './approvals.ts';
import { BackendSchema } from './backend.ts';
import { RunnerHopsSchema } from './bench-hops.ts';
import { AgentEventSchema, ErrorInfoSchema } from './events.ts';
import { RepositorySchema } from './workspace/repository.ts';
import { RunnerIdentityProofSchema } from './runner-identity.ts';

// The runner link: the runner dials the hub's WebSocket and both sides send
// JSON text frames validated by these schemas. docs/DESIGN.md "Runner link"
// is the prose version; this file is the source of truth.
//
// Reliability model: everything the hub must not lose (events, transcripts)
// is a *sequenced frame*. Seqs are assigned by the runner, start at 1 for
// each runner process (runnerId), and are gap-free. The hub acks the highest
// seq it has durably stored (a streaming turn's frames together, a turn's end
// at once); the runner keeps every unacked frame (bounded)
// and, after a reconnect, resends from the `ackedSeq` the hub reports in
// `welcome`. Everything else (replies, status, heartbeats) is unsequenced:
// lost on a dropped link and re-established after the next welcome.

export const WIRE_PROTOCOL_VERSION = 1;

/**
 * Heartbeat frames are fixed strings so a Durable Object can answer them with
 * `setWebSocketAutoResponse` without waking up.
 */
export const RUNNER_LINK_PING = '{"type":"ping"}';
export const RUNNER_LINK_PONG = '{"type":"pong"}';

/**
 * Close codes the hub uses to tell the runner not to reconnect. Any other
 * close (1000, 1001, 1006, 1011, ...) is a transient link loss.
 */
export const RunnerCloseCode = {
  /** A frame failed validation or broke the sequencing rules. */
  protocolError: 4400,
  /** Token missing, invalid or expired. */
  unauthorized: 4401,
  /** The session is gone (deleted or stopped for good). */
  sessionGone: 4404,
  /** Another runner for this session connected after this one. */
  superseded: 4409,
} as const;

export const CapabilitiesSchema = z.object({
  /** The tool-call guard: `loaded` when its self-test at runner start passed, else `missing` (no CLI is spawned). */
  guard: z.enum(['loaded', 'missing']),
  sandbox: z.enum(['bubblewrap', 'container', 'none']),
});
export type Capabilities = z.infer<typeof CapabilitiesSchema>;

/**
 * A CLI's conversation file, enough for another runner to resume it.
 * claude: `$CLAUDE_CONFIG_DIR/projects/<cwd>/<resumeId>.jsonl` (resumeId = session id).
 * pi: `<session dir>/<resumeId>` (resumeId = the session file's base name).
 * Where it lands is the restoring runner's business, so no directory travels.
 */
export const TranscriptSchema = z.object({
  backend: BackendSchema,
  resumeId: z
    .string()
    .min(1)
    .max(200)
    // A file name, never a path: it is joined onto a directory on restore.
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be a plain file name'),
  encoding: z.literal('gzip+base64'),
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
  /** sha256 (hex) of the uncompressed file. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Size of the uncompressed file. */
  bytes: z.number().int().nonnegative(),
});
export type Transcript = z.infer<typeof TranscriptSchema>;

const seq = z.number().int().positive();

const SequencedEventSchema = z.object({
  seq,
  event: AgentEventSchema,
  /** The hub's messageId of the turn this event belongs to; absent outside a turn. */
  messageId: z.string().min(1).optional(),
  /** Bench only (bench-hops.ts): absent unless the runner runs with SWITCHYARD_BENCH_HOPS=1. */
  hops: RunnerHopsSchema.optional(),
});
export type SequencedEvent = z.infer<typeof SequencedEventSchema>;

/** The CLI process: `stopped` is normal after a crash or kill; the next message starts one. */
const RunnerCliSchema = z.enum(['starting', 'running', 'stopped']);

/** What the runner is doing; latest wins, re-sent after every welcome. */
const RunnerStatusSchema = z.object({
  type: z.literal('status'),
  /** `ready`: a message would be accepted; `busy`: a turn runs. */
  state: z.enum(['starting', 'ready', 'busy', 'stopping']),
  cli: RunnerCliSchema,
  reason: z.string().optional(),
});
export type RunnerStatus = z.infer<typeof RunnerStatusSchema>;

const ByeReasonSchema = z.enum(['idle', 'max_lifetime', 'signal', 'hub_shutdown', 'buffer_overflow', 'fatal']);
export type ByeReason = z.infer<typeof ByeReasonSchema>;

export const RunnerToHubSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('hello'),
    protocol: z.literal(WIRE_PROTOCOL_VERSION),
    /** Unique per runner process; seqs are scoped to it. */
    runnerId: z.string().min(1).max(100),
    sessionId: z.string().min(1),
    backend: BackendSchema,
    cliVersion: z.string(),
    capabilities: CapabilitiesSchema,
    /** Highest seq this runner has produced (0 on a fresh runner). */
    lastSeq: z.number().int().nonnegative(),
    /**
     * Its CLI as the hello leaves: `starting` also for one the runner starts at the welcome. The
     * hub shows a session `ready` only once a message would not wait for the CLI.
     */
    cli: RunnerCliSchema.optional(),
    /** Which task this runner is (runner-identity.ts); present when its launch asked for one. */
    identity: RunnerIdentityProofSchema.optional(),
  }),
  /** Sequenced: consecutive seqs, continuing where the previous frame stopped. */
  z.object({
    type: z.literal('events'),
    events: z.array(SequencedEventSchema).min(1).max(1000),
    /** Bench only (bench-hops.ts): wall-clock ms the runner sent this frame; absent unless SWITCHYARD_BENCH_HOPS=1. */
    sentAt: z.number().optional(),
  }),
  /** Sequenced, sharing the events' counter: sent after the turn.done it follows. */
  z.object({ type: z.literal('transcript'), seq, transcript: TranscriptSchema }),
  RunnerStatusSchema,
  /** A user_message or interrupt was taken. `duplicate`: this messageId was already taken earlier. */
  z.object({ type: z.literal('accepted'), inReplyTo: z.string().min(1), duplicate: z.boolean().optional() }),
  /** A typed refusal of a hub request: `busy`, `no_turn`, `stopping`, `invalid_message`. */
  z.object({ type: z.literal('reject'), inReplyTo: z.string().min(1), error: ErrorInfoSchema }),
  /** Last frame before the runner closes the link for good. */
  z.object({
    type: z.literal('bye'),
    reason: ByeReasonSchema,
    /** Highest seq produced; anything above the hub's ack was lost (see `error`). */
    lastSeq: z.number().int().nonnegative(),
    error: ErrorInfoSchema.optional(),
  }),
  z.object({ type: z.literal('ping') }),
]);
export type RunnerToHub = z.infer<typeof RunnerToHubSchema>;

export const HubToRunnerSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('welcome'),
    /** Highest seq of this runnerId the hub holds; the runner resends what follows. */
    ackedSeq: z.number().int().nonnegative(),
    /** The session's latest transcript, for a runner that starts without one (lastSeq 0). */
    transcript: TranscriptSchema.optional(),
    /** A fresh runner token for the next reconnect (tokens are short-lived). */
    runnerToken: z.string().min(1).optional(),
    /** The session's approval mode (absent: `auto`); the CLI is spawned after the first welcome. */
    approvals: ApprovalModeSchema.optional(),
    /** The session's repository while its clone is not yet committed: clone it before the first CLI. */
    repository: RepositorySchema.optional(),
    /**
     * The durable workspace's generation when the welcome was sent. 0: nothing was ever stored, so
     * a new runner has nothing to restore and its first message need not wait for the store (a
     * later upload reaches a live runner as `workspace_sync`). Absent: restore.
     */
    workspaceGeneration: z.number().int().nonnegative().optional(),
  }),
  /** Every sequenced frame up to and including `seq` is durably stored. */
  z.object({ type: z.literal('ack'), seq: z.number().int().nonnegative() }),
  /** Idempotent by messageId: the same id again is answered `accepted {duplicate: true}`. */
  z.object({ type: z.literal('user_message'), messageId: z.string().min(1), message: UserMessageSchema }),
  z.object({ type: z.literal('interrupt'), requestId: z.string().min(1) }),
  /** Stop now: interrupt any turn, upload the transcript, say bye. */
  z.object({ type: z.literal('shutdown'), reason: z.string() }),
  /** A replacement runner token, same use as welcome.runnerToken. */
  z.object({ type: z.literal('token'), runnerToken: z.string().min(1) }),
  /** The durable workspace changed outside this runner (the Files API): fetch the manifest and apply it. */
  z.object({ type: z.literal('workspace_sync'), generation: z.number().int().nonnegative() }),
  /** A tool call's approval was decided; the runner answers `accepted {inReplyTo: approvalId}`. */
  ApprovalDecisionFrameSchema,
  z.object({ type: z.literal('pong') }),
]);
export type HubToRunner = z.infer<typeof HubToRunnerSchema>;
