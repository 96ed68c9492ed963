import { z } from '@hono/zod-openapi';
import { ULID_PATTERN } from '../ids.ts';

export const RoleSchema = z.enum(['admin', 'user']);
export type Role = z.infer<typeof RoleSchema>;

export const IdSchema = z.string().regex(ULID_PATTERN, 'must be a ULID');

export const UsernameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{2,31}$/,
    '3-32 characters: letters, digits, ".", "_" or "-", starting with a letter or digit',
  )
  .openapi({ example: 'ada' });

// Long enough to resist guessing; bounded so hashing cost stays predictable.
export const NewPasswordSchema = z.string().min(12, 'at least 12 characters').max(256, 'at most 256 characters');

/** The signed-in user's password, proven again before an action that mints or grants a credential. */
export const CurrentPasswordSchema = z
  .string({ error: 'required: the password of the signed-in user' })
  .min(1, 'required: the password of the signed-in user')
  .max(1024)
  .openapi({ description: 'the caller’s own password, proven again for this action' });

/** What `/api/me` shows about the caller. */
export const PublicUserSchema = z.object({ id: z.string(), username: z.string(), role: RoleSchema }).openapi('Me');
export type PublicUser = z.infer<typeof PublicUserSchema>;

/** What admins see when managing users. */
export const UserSchema = z
  .object({
    id: z.string(),
    username: z.string(),
    role: RoleSchema,
    disabled: z.boolean(),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('User');
export type User = z.infer<typeof UserSchema>;

export const CreateUserSchema = z
  .strictObject({
    username: UsernameSchema,
    password: NewPasswordSchema,
    role: RoleSchema.default('user'),
    currentPassword: CurrentPasswordSchema,
  })
  .openapi('CreateUser');

export const UpdateUserSchema = z
  .strictObject({
    role: RoleSchema.optional(),
    password: NewPasswordSchema.optional(),
    disabled: z.boolean().optional(),
    currentPassword: CurrentPasswordSchema.optional().openapi({
      description: 'required when the change grants access: a password, the admin role, or enabling',
    }),
  })
  .refine((u) => u.role !== undefined || u.password !== undefined || u.disabled !== undefined, {
    message: 'give at least one of role, password, disabled',
  })
  .openapi('UpdateUser');
export type UpdateUser = z.infer<typeof UpdateUserSchema>;

export const UserIdParamSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
});
