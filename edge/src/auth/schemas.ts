import { z } from '@hono/zod-openapi';
import { CurrentPasswordSchema, NewPasswordSchema, PublicUserSchema } from '../users/schemas.ts';

// Login accepts anything string-shaped within bounds: the password policy is for new passwords
// only, and telling a guesser which shapes are impossible would help them.
export const LoginSchema = z
  .strictObject({
    username: z.string().min(1).max(64),
    password: z.string().min(1).max(1024),
  })
  .openapi('Login');

export const LoginResultSchema = z
  .object({
    user: PublicUserSchema,
    token: z.string().openapi({ description: 'bearer token; the same value is set as the HttpOnly cookie' }),
    expiresAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('LoginResult');

export const PasswordChangedSchema = z
  .object({
    token: z.string().openapi({
      description: 'the new bearer token of this login session; the same value is set as the HttpOnly cookie',
    }),
    expiresAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('PasswordChanged');

export const ChangePasswordSchema = z
  .strictObject({
    currentPassword: CurrentPasswordSchema,
    newPassword: NewPasswordSchema,
  })
  .openapi('ChangePassword');
