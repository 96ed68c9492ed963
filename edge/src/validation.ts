import type { Context } from 'hono';
import type { z } from 'zod';
import { apiError } from './errors.ts';

/** Turns the first zod issue into the API's 400: `field` is the dotted path, the message names it. */
function describeIssue(issue: z.core.$ZodIssue): { field?: string; message: string } {
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const field = [...issue.path.map(String), key].join('.');
    return { field, message: `${field}: unknown field` };
  }
  const field = issue.path.map(String).join('.');
  if (field === '') return { message: `request: ${issue.message}` };
  return { field, message: `${field}: ${issue.message}` };
}

type HookResult = { success: true } | { success: false; error: z.ZodError; target?: string };

/** defaultHook for every OpenAPIHono router: invalid input becomes a 400 error value. */
export function validationHook(result: HookResult, c: Context) {
  if (result.success) return undefined;
  return invalidInput(c, result.error);
}

/** The API's 400 for input that failed its schema (for routes that parse a body themselves). */
export function invalidInput(c: Context, error: z.ZodError) {
  const first = error.issues[0];
  if (first === undefined) return apiError(c, 400, 'invalid_request', 'invalid request');
  const { field, message } = describeIssue(first);
  // A body that is not an object at all is reported without a field; so is a whole-body rule
  // ("give at least one field"), in its own words.
  if (field === undefined) {
    const text = first.code === 'invalid_type' ? 'request body must be a JSON object' : first.message;
    return apiError(c, 400, 'invalid_request', text);
  }
  return apiError(c, 400, 'invalid_request', message, field);
}

/** Renders a client-supplied value for an error message without letting it grow unbounded. */
export function echo(value: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > 64 ? `${s.slice(0, 61)}...` : s;
}
