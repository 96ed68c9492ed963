import { z } from 'zod';

export const BackendSchema = z.enum(['claude', 'pi']);
export type Backend = z.infer<typeof BackendSchema>;
