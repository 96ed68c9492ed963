import { z } from 'zod';
import { UserMessageSchema } from './adapter.ts';
import { BackendSchema } from './backend.ts';
import { AgentEventSchema, ErrorInfoSchema } from './events.ts';

// Runner ↔ hub messages over the runner's WebSocket (JSON text frames).
// Events carry a runner-assigned sequence number; the hub acks the highest
// contiguous seq it has durably written, and a reconnecting runner resends
// everything after the last ack.

export const CapabilitiesSchema = z.object({
  guard: z.enum(['loaded', 'missing', 'unchecked']),
  sandbox: z.enum(['bubblewrap', 'container', 'none']),
});

export const TranscriptSchema = z.object({
  /** The CLI's resume handle: claude session id, or pi session file name. */
  cliSessionId: z.string().min(1),
  backend: BackendSchema,
  /** base64 of the transcript file (JSONL). */
  data: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type Transcript = z.infer<typeof TranscriptSchema>;

export const SequencedEventSchema = z.object({ seq: z.number().int().positive(), event: AgentEventSchema });
export type SequencedEvent = z.infer<typeof SequencedEventSchema>;

export const RunnerToHubSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('hello'),
    runnerId: z.string().min(1),
    sessionId: z.string().min(1),
    backend: BackendSchema,
    cliVersion: z.string(),
    capabilities: CapabilitiesSchema,
    /** Highest seq this runner has produced so far (0 on a fresh runner). */
    lastSeq: z.number().int().nonnegative(),
  }),
  z.object({ type: z.literal('events'), events: z.array(SequencedEventSchema).min(1).max(1000) }),
  z.object({ type: z.literal('transcript'), transcript: TranscriptSchema }),
  /** A typed refusal of a hub request, e.g. `busy` for a message while a turn runs. */
  z.object({ type: z.literal('reject'), inReplyTo: z.string().min(1), error: ErrorInfoSchema }),
  z.object({ type: z.literal('bye'), reason: z.string() }),
]);
export type RunnerToHub = z.infer<typeof RunnerToHubSchema>;

export const HubToRunnerSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('welcome'),
    /** Highest seq the hub already holds from this runner; resend what follows. */
    ackedSeq: z.number().int().nonnegative(),
    /** Transcript of an earlier runner of this session, to resume from. */
    transcript: TranscriptSchema.optional(),
  }),
  z.object({ type: z.literal('ack'), seq: z.number().int().nonnegative() }),
  z.object({ type: z.literal('user_message'), messageId: z.string().min(1), message: UserMessageSchema }),
  z.object({ type: z.literal('interrupt'), requestId: z.string().min(1) }),
  z.object({ type: z.literal('shutdown'), reason: z.string() }),
]);
export type HubToRunner = z.infer<typeof HubToRunnerSchema>;
