import { describe, expect, it } from 'vitest';
import {
  classifyProviderError,
  parseProviderErrorText,
  PROVIDER_ERROR_CODES,
  type ProviderErrorFacts,
} from '../src/provider-errors.ts';

// The one classification table, fed the facts each CLI really reports
// (claude 2.1.197 api_retry/result fields, pi 0.73.1 errorMessage text, seen
// against the offline model and read in claude's bundle).

const cases: Array<[name: string, facts: ProviderErrorFacts, code: string, retryable: boolean]> = [
  ['401 by status', { status: 401 }, 'provider_auth', false],
  ['403 by status', { status: 403 }, 'provider_auth', false],
  ['claude api_retry 401', { status: 401, type: 'authentication_failed' }, 'provider_auth', false],
  ['claude result text only', { message: 'Invalid API key · Fix external API key' }, 'provider_auth', false],
  ['claude category only', { type: 'authentication_failed' }, 'provider_auth', false],
  ['402', { status: 402 }, 'provider_billing', false],
  [
    'claude billing category on a 400',
    { status: 400, type: 'billing_error', message: 'Credit balance is too low' },
    'provider_billing',
    false,
  ],
  [
    '400 whose text is about credit',
    {
      status: 400,
      type: 'invalid_request_error',
      message: 'Your credit balance is too low to access the Anthropic API.',
    },
    'provider_billing',
    false,
  ],
  [
    '400',
    { status: 400, type: 'invalid_request_error', message: 'messages: field required' },
    'provider_invalid_request',
    false,
  ],
  ['404 model', { status: 404, type: 'model_not_found' }, 'provider_invalid_request', false],
  ['413', { status: 413 }, 'provider_invalid_request', false],
  ['another 4xx', { status: 418 }, 'provider_invalid_request', false],
  ['429', { status: 429, type: 'rate_limit' }, 'provider_rate_limited', true],
  ['rate limit by text', { message: 'Number of requests has exceeded your rate limit' }, 'provider_rate_limited', true],
  ['529', { status: 529 }, 'provider_overloaded', true],
  // claude labels a 529's synthetic message server_error; the status decides.
  ['529 with claude server_error category', { status: 529, type: 'server_error' }, 'provider_overloaded', true],
  [
    'claude gives up on repeated 529 (no status)',
    { type: 'server_error', message: 'API Error: Repeated 529 Overloaded errors' },
    'provider_overloaded',
    true,
  ],
  ['500', { status: 500, type: 'api_error' }, 'provider_unavailable', true],
  ['503', { status: 503 }, 'provider_unavailable', true],
  ['another 5xx', { status: 599 }, 'provider_unavailable', true],
  ['408', { status: 408 }, 'provider_unavailable', true],
  ['a cut stream (pi)', { message: 'terminated' }, 'provider_unavailable', true],
  [
    'connection refused',
    { message: 'Connection error: connect ECONNREFUSED 127.0.0.1:9' },
    'provider_unavailable',
    true,
  ],
];

describe('classifyProviderError', () => {
  it.each(cases)('%s → %s', (_name, facts, code, retryable) => {
    expect(classifyProviderError(facts)).toMatchObject({ code, retryable });
  });

  it('every class in the code list is reachable, and nothing else is produced', () => {
    const produced = new Set(cases.map(([, facts]) => classifyProviderError(facts)?.code));
    expect([...produced].sort()).toEqual([...PROVIDER_ERROR_CODES].sort());
  });

  it('says what happened, the HTTP status and what to do', () => {
    const e = classifyProviderError({ status: 401, type: 'authentication_error', message: 'invalid x-api-key' });
    expect(e?.message).toBe(
      'The model provider did not accept the key this service uses (HTTP 401). Sending it again will not help until an administrator fixes the key or its access to this model.',
    );
    expect(classifyProviderError({ status: 429 })?.message).toMatch(
      /^The model provider is limiting how many requests this service may send \(HTTP 429\)\. Wait a minute/,
    );
    expect(classifyProviderError({ message: 'terminated' })?.message).toBe(
      'The model provider failed or could not be reached. Send the message again shortly; if it keeps happening, ask an administrator.',
    );
  });

  it('tells a person whether sending again helps, and when an administrator must act', () => {
    for (const [name, facts, , retryable] of cases) {
      const message = classifyProviderError(facts)?.message ?? '';
      if (retryable) expect(message, name).toMatch(/send the message again/i);
      else expect(message, name).toMatch(/Sending it again (unchanged )?will (not help|fail).*administrator/);
    }
  });

  // What the CLIs really print: claude names its base URL (the runner's loopback proxy), a
  // refused connection names its address, a gateway may name itself.
  const operatorText = [
    'API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:4480).',
    'Connection error: connect ECONNREFUSED 127.0.0.1:9',
    '502 {"type":"error","error":{"type":"api_error","message":"the model endpoint localhost:8788 is unreachable (ECONNREFUSED)"}}',
    'invalid x-api-key for https://gateway.internal.example:8443/v1 (set SWITCHYARD_MODEL_URL or ANTHROPIC_API_KEY)',
  ];
  it.each(operatorText)('no variable name, host or port reaches a person: %s', (text) => {
    const parsed = parseProviderErrorText(text);
    for (const facts of [parsed, { ...parsed, type: 'api_error' }, { ...parsed, status: 401 }]) {
      const message = classifyProviderError(facts)?.message;
      expect(message).toBeDefined();
      expect(message).not.toMatch(/SWITCHYARD_|ANTHROPIC_|127\.0\.0\.1|localhost|gateway|example|https?:|:\d{2,5}\b/);
    }
  });

  it('a very long provider text leaves the message short', () => {
    const e = classifyProviderError({ status: 400, message: 'x'.repeat(5000) });
    expect(e?.message.length).toBeLessThan(300);
    expect(e?.message).toMatch(/check which model is configured\.$/);
  });

  it('facts that name no provider failure are not classified', () => {
    expect(classifyProviderError({})).toBeUndefined();
    expect(classifyProviderError({ type: 'unknown' })).toBeUndefined();
    expect(classifyProviderError({ message: 'Tool execution failed' })).toBeUndefined();
    expect(classifyProviderError({ status: 200 })).toBeUndefined();
  });
});

describe('parseProviderErrorText', () => {
  it('pi: status and the Anthropic error body', () => {
    expect(
      parseProviderErrorText(
        '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
      ),
    ).toEqual({
      status: 401,
      type: 'authentication_error',
      message: 'invalid x-api-key',
    });
  });

  it('pi: a status with a body that is not JSON keeps the body as the message', () => {
    expect(parseProviderErrorText('502 {bad gateway}')).toEqual({ status: 502, message: '{bad gateway}' });
  });

  it('claude: "API Error: 400 …" and "API Error: Request rejected (429) …"', () => {
    expect(parseProviderErrorText('API Error: 400 Invalid request (offline model).')).toMatchObject({ status: 400 });
    expect(parseProviderErrorText('API Error: Request rejected (429) · slow down')).toMatchObject({ status: 429 });
  });

  it('text with no status is only a message', () => {
    expect(parseProviderErrorText('terminated')).toEqual({ message: 'terminated' });
    expect(parseProviderErrorText('')).toEqual({});
  });
});
