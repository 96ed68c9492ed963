import { z } from '@hono/zod-openapi';
import { ULID_PATTERN } from '../ids.ts';

const AuditActionSchema = z.enum([
  'settings.update',
  'user.create',
  'user.update',
  'user.delete',
  'token.create',
  'token.revoke',
  'auth.login_failed',
  'session.read',
  'session.delete',
  'approval.decide',
  'pool.update',
]);
export type AuditAction = z.infer<typeof AuditActionSchema>;

const JsonObject = z.record(z.string(), z.unknown());

const AuditEntrySchema = z
  .object({
    id: z.string(),
    at: z.string().openapi({ format: 'date-time' }),
    actor: z.object({ id: z.string(), username: z.string() }).nullable(),
    action: AuditActionSchema,
    target: z.string().nullable(),
    before: JsonObject.nullable().openapi({ description: 'changed fields before; null for creations' }),
    after: JsonObject.nullable().openapi({ description: 'changed fields after; null for deletions' }),
  })
  .openapi('AuditEntry');
export type AuditEntry = z.infer<typeof AuditEntrySchema>;

export const AuditPageSchema = z
  .object({
    entries: z.array(AuditEntrySchema),
    nextCursor: z.string().nullable().openapi({ description: 'pass as `cursor` for the next (older) page' }),
  })
  .openapi('AuditPage');

export const AuditQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(ULID_PATTERN, 'must be an entry id from nextCursor').optional(),
  action: AuditActionSchema.optional(),
});
export type AuditQuery = z.infer<typeof AuditQuerySchema>;
