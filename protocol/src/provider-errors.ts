import type { ErrorInfo } from './events.ts';

// Provider (model API) failures, classified once for both CLIs. Pure: the
// codecs gather what their CLI says (HTTP status, error type or the CLI's own
// category, text) and this table decides the code, whether trying again can
// help, and what a person should do about it.
//
// The message is read by whoever sent the chat message, in the page: it names no
// environment variable, host or port, and never repeats the provider's or the
// CLI's text, which does (claude: "check your inference gateway (127.0.0.1:…)",
// a refused connection's address). The HTTP status is kept, for a report to an
// administrator.

export const PROVIDER_ERROR_CODES = [
  'provider_auth',
  'provider_billing',
  'provider_invalid_request',
  'provider_rate_limited',
  'provider_overloaded',
  'provider_unavailable',
] as const;
type ProviderErrorCode = (typeof PROVIDER_ERROR_CODES)[number];

/** What a CLI reported about one failed model request; every field optional. */
export interface ProviderErrorFacts {
  status?: number | null | undefined;
  /** Anthropic `error.type` (`authentication_error`, …) or the CLI's category (claude: `authentication_failed`, `rate_limit`, …). */
  type?: string | undefined;
  /** The provider's or the CLI's text. */
  message?: string | undefined;
}

interface ProviderErrorClass {
  code: ProviderErrorCode;
  /** Whether the same message can succeed later without anyone changing anything. */
  retryable: boolean;
  statuses: readonly number[];
  types: readonly string[];
  /** Text that identifies the class when the status is missing or says less (a 400 about credit). */
  text?: RegExp;
  /** What happened, in words a person sending messages understands. */
  summary: string;
  /** Whether sending again helps, and when an administrator must act instead. */
  action: string;
}

/**
 * The table. Billing is looked at first by every signal (a billing problem
 * arrives as 402, as a 400 "credit balance is too low", or as claude's
 * `billing_error`); then the HTTP status; then the text; then the type.
 */
const PROVIDER_ERROR_TABLE: readonly ProviderErrorClass[] = [
  {
    code: 'provider_billing',
    retryable: false,
    statuses: [402],
    types: ['billing_error'],
    text: /credit balance|billing|purchase credits|payment required|usage credits are required/i,
    summary: 'The model provider refused the request for a billing reason, such as the account being out of credit',
    action: 'Sending it again will not help until an administrator adds credit or fixes billing on that account.',
  },
  {
    code: 'provider_auth',
    retryable: false,
    statuses: [401, 403],
    types: ['authentication_error', 'permission_error', 'authentication_failed', 'oauth_org_not_allowed'],
    text: /invalid api key|invalid x-api-key|authentication|unauthori[sz]ed|permission/i,
    summary: 'The model provider did not accept the key this service uses',
    action: 'Sending it again will not help until an administrator fixes the key or its access to this model.',
  },
  {
    code: 'provider_rate_limited',
    retryable: true,
    statuses: [429],
    types: ['rate_limit_error', 'rate_limit'],
    text: /rate.?limit|too many requests/i,
    summary: 'The model provider is limiting how many requests this service may send',
    action: 'Wait a minute and send the message again; if it keeps happening, ask an administrator to raise the limit.',
  },
  {
    code: 'provider_overloaded',
    retryable: true,
    statuses: [529],
    types: ['overloaded_error', 'overloaded'],
    text: /overloaded/i,
    summary: 'The model provider is overloaded',
    action: 'Send the message again in a few minutes.',
  },
  {
    code: 'provider_invalid_request',
    retryable: false,
    statuses: [400, 404, 413, 422],
    types: ['invalid_request_error', 'not_found_error', 'request_too_large', 'invalid_request', 'model_not_found'],
    summary: 'The model provider rejected the request as invalid',
    action:
      'Sending it again unchanged will fail the same way: shorten the message or its attachments; if that does not help, ask an administrator to check which model is configured.',
  },
  {
    code: 'provider_unavailable',
    retryable: true,
    statuses: [408, 409, 500, 502, 503, 504],
    types: ['api_error', 'timeout_error', 'server_error'],
    text: /server.?error|service.?unavailable|bad gateway|timed? ?out|terminated|fetch failed|connection (?:error|refused|reset|lost)|socket hang up|ECONNREFUSED|ECONNRESET/i,
    summary: 'The model provider failed or could not be reached',
    action: 'Send the message again shortly; if it keeps happening, ask an administrator.',
  },
];

const byCode = new Map(PROVIDER_ERROR_TABLE.map((c) => [c.code, c]));

function classOf(f: ProviderErrorFacts): ProviderErrorClass | undefined {
  const status = typeof f.status === 'number' ? f.status : undefined;
  const type = f.type?.toLowerCase();
  const text = f.message ?? '';
  const billing = byCode.get('provider_billing');
  if (
    billing &&
    ((status !== undefined && billing.statuses.includes(status)) ||
      (type !== undefined && billing.types.includes(type)) ||
      billing.text?.test(text))
  ) {
    return billing;
  }
  if (status !== undefined) {
    const hit = PROVIDER_ERROR_TABLE.find((c) => c.statuses.includes(status));
    if (hit) return hit;
  }
  const byText = text ? PROVIDER_ERROR_TABLE.find((c) => c.text?.test(text)) : undefined;
  if (byText) return byText;
  const byType = type !== undefined ? PROVIDER_ERROR_TABLE.find((c) => c.types.includes(type)) : undefined;
  if (byType) return byType;
  if (status !== undefined && status >= 500) return byCode.get('provider_unavailable');
  if (status !== undefined && status >= 400) return byCode.get('provider_invalid_request');
  return undefined;
}

/**
 * `{code, message, retryable}` for a provider failure, or undefined when the
 * facts do not identify one. The message says what happened, the HTTP status
 * when there is one, and what to do; the type and text only choose the class.
 */
export function classifyProviderError(f: ProviderErrorFacts): ErrorInfo | undefined {
  const c = classOf(f);
  if (!c) return undefined;
  const status = typeof f.status === 'number' ? ` (HTTP ${f.status})` : '';
  return { code: c.code, message: `${c.summary}${status}. ${c.action}`, retryable: c.retryable };
}

/**
 * Reads the status, type and message out of an error text as the CLIs print
 * it: pi `401 {"type":"error","error":{"type":"authentication_error","message":"…"}}`,
 * claude `API Error: 400 Invalid request` or `API Error: Request rejected (429) · …`.
 */
export function parseProviderErrorText(text: string): ProviderErrorFacts {
  const trimmed = text.trim();
  const lead = /^(\d{3})\s+(\{[\s\S]*\})\s*$/.exec(trimmed);
  if (lead?.[1] && lead[2]) {
    const status = Number(lead[1]);
    try {
      const body: unknown = JSON.parse(lead[2]);
      const err = isRecord(body) && isRecord(body.error) ? body.error : undefined;
      const type = err && typeof err.type === 'string' ? err.type : undefined;
      const message = err && typeof err.message === 'string' ? err.message : undefined;
      return { status, ...(type !== undefined && { type }), ...(message !== undefined && { message }) };
    } catch {
      return { status, message: lead[2] };
    }
  }
  const status =
    /^(\d{3})\b/.exec(trimmed)?.[1] ??
    /^API Error:\s*(\d{3})\b/i.exec(trimmed)?.[1] ??
    /^API Error:[^(]*\((\d{3})\)/i.exec(trimmed)?.[1];
  return { ...(status !== undefined && { status: Number(status) }), ...(trimmed && { message: trimmed }) };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
