// The one way the page talks to the API: openapi-fetch over the generated types (schema.d.ts),
// the HttpOnly session cookie (never a token in script-readable storage), and every failure
// turned into an ApiError value with the server's code, message and field.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.d.ts';

export type Schemas = components['schemas'];

export interface ApiError {
  status: number;
  code: string;
  message: string;
  field?: string;
  /** From Retry-After on 429. */
  retryAfterSeconds?: number;
}

/** Set by the app shell: what to do when the cookie is gone or expired. */
let onUnauthenticated: () => void = () => undefined;
export function setUnauthenticatedHandler(f: () => void): void {
  onUnauthenticated = f;
}

const watch401: Middleware = {
  onResponse({ response, request }) {
    // A failed sign-in is also a 401; it is handled by the sign-in page itself.
    if (response.status === 401 && !new URL(request.url).pathname.endsWith('/auth/login')) onUnauthenticated();
    return undefined;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
api.use(watch401);

type Result<T> = { data?: T; error?: unknown; response: Response };

function errorFrom(status: number, body: unknown, response?: Response): ApiError {
  const e = (body as { error?: { code?: unknown; message?: unknown; field?: unknown } } | undefined)?.error;
  const retry = Number(response?.headers.get('Retry-After'));
  return {
    status,
    code: typeof e?.code === 'string' ? e.code : `http_${status}`,
    message: typeof e?.message === 'string' ? e.message : `request failed (${status})`,
    ...(typeof e?.field === 'string' && { field: e.field }),
    ...(Number.isFinite(retry) && retry > 0 && { retryAfterSeconds: retry }),
  };
}

export function isApiError(e: unknown): e is ApiError {
  return typeof e === 'object' && e !== null && 'code' in e && 'status' in e && 'message' in e;
}

const networkError = (): ApiError => ({
  status: 0,
  code: 'network',
  message: 'cannot reach the server; check your connection',
});

/**
 * A same-origin request outside the typed client, for raw bodies and non-JSON answers (the Files
 * API's uploads and downloads, the workspace diff): the response, or throws an ApiError.
 */
export async function rawRequest(method: string, url: string, body?: Blob): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { method, credentials: 'same-origin', ...(body !== undefined && { body }) });
  } catch {
    throw networkError();
  }
  if (!res.ok) throw errorFrom(res.status, await res.json().catch(() => undefined), res);
  return res;
}

/** Awaits an openapi-fetch call: its data, or throws an ApiError (status 0 = network failure). */
export async function call<T>(p: Promise<Result<T>>): Promise<T> {
  let r: Result<T>;
  try {
    r = await p;
  } catch {
    throw networkError();
  }
  if (r.error !== undefined || !r.response.ok) throw errorFrom(r.response.status, r.error, r.response);
  return r.data as T;
}

/** What the page calls a request field whose API name would mean nothing to a person. */
const FIELD_LABELS: Record<string, string> = { currentPassword: 'Your password' };

/** A message for a person, naming the field when the server named one (by its label when it has one). */
export function describeError(e: unknown): string {
  if (!isApiError(e)) return e instanceof Error ? e.message : 'something went wrong';
  if (e.field === undefined) return e.message;
  const label = FIELD_LABELS[e.field];
  if (label !== undefined) return `${label}: ${withoutField(e)}`;
  return e.message.includes(e.field) ? e.message : `${e.field}: ${e.message}`;
}

/** The server's message about its field, shown beside that field. */
export function fieldMessage(e: ApiError): string {
  const text = withoutField(e);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The message without the `field: ` prefix the server starts it with. */
function withoutField(e: ApiError): string {
  const prefix = `${e.field}: `;
  return e.field !== undefined && e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
}
