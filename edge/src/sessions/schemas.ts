import { z } from '@hono/zod-openapi';
import {
  ApprovalModeSchema,
  BackendSchema,
  ContentBlockSchema,
  ImageSchema,
  RepositorySchema,
  MAX_IMAGES_PER_MESSAGE,
  SessionStateSchema,
  StopReasonSchema,
} from '@switchyard/protocol';
import { ULID_PATTERN } from '../ids.ts';

export const SessionIdParamSchema = z.object({
  id: z
    .string()
    .regex(ULID_PATTERN, 'must be a session id')
    .openapi({ param: { name: 'id', in: 'path' } }),
});

export const SessionSchema = z
  .object({
    id: z.string(),
    title: z.string().nullable(),
    backend: BackendSchema.openapi({ description: 'pinned at creation; later backend switches do not change it' }),
    state: SessionStateSchema,
    stateReason: z.string().nullable(),
    ownerId: z.string(),
    approvals: ApprovalModeSchema.openapi({
      description: 'chosen at creation: `ask` waits for a person before each tool call the guard allows',
    }),
    repository: z
      .object({ url: z.string(), ref: z.string().optional() })
      .nullable()
      .openapi({ description: 'the git repository cloned into the workspace before the first turn; null: none' }),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Session');
export type Session = z.infer<typeof SessionSchema>;

export const SessionDetailSchema = SessionSchema.extend({
  turn: z
    .object({ messageId: z.string() })
    .nullable()
    .openapi({ description: 'the message whose turn is running or waiting for its runner' }),
  runner: z
    .object({
      launchId: z.string(),
      ref: z.string().nullable(),
      runnerId: z.string().nullable(),
      connected: z.boolean(),
      startedAt: z.string().openapi({ format: 'date-time' }),
    })
    .nullable(),
  lastEventId: z
    .string()
    .nullable()
    .openapi({ description: 'pass as Last-Event-ID / ?after= to stream only what follows' }),
}).openapi('SessionDetail');

const TitleSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'at most 200 characters')
  .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters');

export const CreateSessionSchema = z
  .strictObject({
    title: TitleSchema.optional(),
    approvals: ApprovalModeSchema.optional().openapi({ description: 'default: settings `defaultApprovals`' }),
    repository: RepositorySchema.optional().openapi({
      description:
        'a git repository cloned into the workspace before the first turn (which hosts may be cloned: settings `repositoryHosts`)',
    }),
  })
  .openapi('CreateSession');

export const RenameSessionSchema = z
  .strictObject({ title: TitleSchema.nullable().openapi({ description: 'null clears the title' }) })
  .openapi('RenameSession');

export const ListSessionsQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(ULID_PATTERN, 'must be a session id from nextCursor').optional(),
});

export const SessionPageSchema = z
  .object({
    sessions: z.array(SessionSchema),
    nextCursor: z.string().nullable().openapi({ description: 'pass as `cursor` for the next (older) page' }),
  })
  .openapi('SessionPage');

const AdminSessionSchema = SessionSchema.extend({
  owner: z.object({ id: z.string(), username: z.string() }),
  runnerRef: z.string().nullable().openapi({ description: "the launcher's reference (ECS task ARN, local task id)" }),
}).openapi('AdminSession');

export const AdminSessionsQuerySchema = z.strictObject({
  state: z
    .enum(['live', 'all'])
    .default('live')
    .openapi({ description: '`live`: sessions with a runner starting, running or stopping' }),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(ULID_PATTERN, 'must be a session id from nextCursor').optional(),
});

export const AdminSessionPageSchema = z
  .object({ sessions: z.array(AdminSessionSchema), nextCursor: z.string().nullable() })
  .openapi('AdminSessionPage');

export const PostMessageSchema = z
  .strictObject({
    text: z.string().min(1, 'must not be empty'),
    images: z.array(ImageSchema).max(MAX_IMAGES_PER_MESSAGE, `at most ${MAX_IMAGES_PER_MESSAGE} images`).optional(),
    clientMessageId: z
      .string()
      .min(1)
      .max(200, 'at most 200 characters')
      .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
      .optional()
      .openapi({ description: 'makes retries safe: the same id again returns the same messageId and starts nothing' }),
  })
  .openapi('PostMessage');

export const MessageAcceptedSchema = z
  .object({
    messageId: z.string(),
    duplicate: z.boolean().openapi({ description: 'true when this clientMessageId was already accepted' }),
  })
  .openapi('MessageAccepted');

export const StartRunnerSchema = z
  .object({
    started: z.boolean().openapi({
      description:
        'false: nothing new was started (a runner was already running or starting, or the session cannot start; its events say why)',
    }),
  })
  .openapi('StartRunner');

export const EventsQuerySchema = z.strictObject({
  after: z
    .string()
    .regex(ULID_PATTERN, 'must be an event id')
    .optional()
    .openapi({ description: 'replay events after this id (Last-Event-ID wins when both are given)' }),
  presence: z.literal('1', { error: 'must be 1 when given' }).optional().openapi({
    description: 'also send `event: presence` (no id) with who is watching, whenever a viewer joins or leaves',
  }),
});

const TranscriptEntrySchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), eventId: z.string(), messageId: z.string(), text: z.string() }),
  z.object({
    role: z.literal('assistant'),
    eventId: z.string(),
    messageId: z.string().nullable(),
    content: z.array(ContentBlockSchema),
  }),
  z.object({
    role: z.literal('tool'),
    eventId: z.string(),
    messageId: z.string().nullable(),
    toolId: z.string(),
    isError: z.boolean(),
    output: z.string(),
  }),
  z.object({
    role: z.literal('turn'),
    eventId: z.string(),
    messageId: z.string().nullable(),
    stopReason: StopReasonSchema,
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  }),
]);

export const SessionTranscriptSchema = z
  .object({
    sessionId: z.string(),
    backend: BackendSchema,
    messages: z.array(TranscriptEntrySchema),
    nextCursor: z.string().nullable().openapi({ description: 'pass as `after` for the next page; null on the last' }),
  })
  .openapi('SessionTranscript');

export const TranscriptQuerySchema = z.strictObject({
  after: z
    .string()
    .regex(ULID_PATTERN, 'must be an event id (a nextCursor)')
    .optional()
    .openapi({ description: 'entries after this event id' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(1000)
    .openapi({ description: 'entries per page (1-1000, default 1000)' }),
});
