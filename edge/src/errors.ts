import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export const ErrorCodeSchema = z.enum([
  'invalid_request',
  'invalid_json',
  'unsupported_media_type',
  'unauthenticated',
  'invalid_credentials',
  'forbidden',
  'csrf_rejected',
  'not_found',
  'conflict',
  'baseline_exists',
  'username_taken',
  'token_name_taken',
  'token_limit',
  'last_admin',
  'payload_too_large',
  'rate_limited',
  'runner_limit',
  'session_log_full',
  'backend_unavailable',
  'not_implemented',
  'internal',
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: ErrorCodeSchema,
      message: z.string(),
      field: z.string().optional().openapi({ description: 'the request field at fault, dotted path' }),
    }),
  })
  .openapi('Error');
type ErrorBody = z.infer<typeof ErrorBodySchema>;

export function errorBody(code: ErrorCode, message: string, field?: string): ErrorBody {
  return { error: field === undefined ? { code, message } : { code, message, field } };
}

export function apiError<S extends ContentfulStatusCode>(
  c: Context,
  status: S,
  code: ErrorCode,
  message: string,
  field?: string,
) {
  return c.json(errorBody(code, message, field), status);
}

const descriptions: Record<number, string> = {
  400: 'invalid input; `field` names the offending field',
  401: 'not authenticated',
  403: 'authenticated but not allowed (or a cross-site cookie request)',
  404: 'no such resource, or not yours',
  409: 'conflict with the current state',
  413: 'request body too large',
  415: 'body is not JSON',
  429: 'too many attempts; see Retry-After',
};

/** OpenAPI response entries for the error statuses a route can answer. */
export function errorResponses<S extends number>(...statuses: S[]) {
  const out = {} as Record<
    S,
    { description: string; content: { 'application/json': { schema: typeof ErrorBodySchema } } }
  >;
  for (const s of statuses) {
    out[s] = { description: descriptions[s] ?? 'error', content: { 'application/json': { schema: ErrorBodySchema } } };
  }
  return out;
}

/** Hono's own failures (malformed JSON, wrong media type, body limit) mapped to the API's codes. */
export function httpExceptionBody(err: HTTPException): { status: ContentfulStatusCode; body: ErrorBody } {
  const status = err.status as ContentfulStatusCode;
  switch (err.status) {
    case 400:
      return { status, body: errorBody('invalid_json', 'request body is not valid JSON') };
    case 413:
      return { status, body: errorBody('payload_too_large', 'request body is too large') };
    case 415:
      return { status, body: errorBody('unsupported_media_type', 'request body must be application/json') };
    case 401:
      return { status, body: errorBody('unauthenticated', 'authentication required') };
    case 404:
      return { status, body: errorBody('not_found', 'not found') };
    default:
      return status >= 500
        ? { status: 500, body: errorBody('internal', 'internal error') }
        : { status, body: errorBody('invalid_request', err.message || 'invalid request') };
  }
}
