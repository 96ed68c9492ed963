import { z } from '@hono/zod-openapi';
import { API_TOKEN_DEFAULT_DAYS, API_TOKEN_MAX_DAYS } from '../auth/tokens.ts';
import { CurrentPasswordSchema, IdSchema } from '../users/schemas.ts';

export const TokenInfoSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: z.string().openapi({ format: 'date-time' }),
    expiresAt: z.string().openapi({ format: 'date-time' }),
    lastUsedAt: z.string().nullable().openapi({ format: 'date-time', description: 'to within five minutes' }),
  })
  .openapi('ApiToken');
export type TokenInfo = z.infer<typeof TokenInfoSchema>;

export const CreateTokenSchema = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(64, 'at most 64 characters')
      .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters'),
    expiresInDays: z.number().int().min(1).max(API_TOKEN_MAX_DAYS).default(API_TOKEN_DEFAULT_DAYS),
    currentPassword: CurrentPasswordSchema,
  })
  .openapi('CreateApiToken');

export const CreatedTokenSchema = z
  .object({
    token: TokenInfoSchema,
    secret: z.string().openapi({ description: 'the bearer secret; shown only in this response' }),
  })
  .openapi('CreatedApiToken');

export const TokenIdParamSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
});

/** A user may hold this many live API tokens; more is a sign of a leak or a script gone wrong. */
export const MAX_LIVE_API_TOKENS = 50;
