import { describe, expect, it } from 'vitest';
import { adapterFor } from '../src/index.ts';

// How each codec turns its CLI's provider-error records into turn.retry /
// turn.done, and when it stops the CLI's own retry loop (lines shaped as the
// pinned CLIs print them; the real CLIs are in test/protocol-real-cli.test.ts).

const claudeRetry = (status: number, error: string) =>
  JSON.stringify({
    type: 'system',
    subtype: 'api_retry',
    attempt: 1,
    max_retries: 10,
    retry_delay_ms: 600,
    error_status: status,
    error,
    session_id: 's',
  });
const claudeInterrupted = JSON.stringify({
  type: 'result',
  subtype: 'error_during_execution',
  is_error: true,
  session_id: 's',
  duration_ms: 5,
});

describe('claude codec', () => {
  it('a retry of a 401 is not shown as a retry: the codec interrupts claude and the turn ends provider_auth', () => {
    const codec = adapterFor('claude').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    expect(codec.parse(claudeRetry(401, 'authentication_failed'))).toEqual([]);
    const input = codec.takeInput();
    expect(input).toHaveLength(1);
    expect(JSON.parse(input[0] ?? '')).toMatchObject({ type: 'control_request', request: { subtype: 'interrupt' } });
    expect(codec.takeInput()).toEqual([]);
    // claude may print another retry before the interrupt lands: one interrupt is enough.
    codec.parse(claudeRetry(401, 'authentication_failed'));
    expect(codec.takeInput()).toEqual([]);
    const done = codec.parse(claudeInterrupted);
    expect(done).toEqual([
      expect.objectContaining({
        type: 'turn.done',
        stopReason: 'error',
        error: expect.objectContaining({ code: 'provider_auth', retryable: false }),
      }),
    ]);
    expect(codec.turnOpen).toBe(false);
  });

  it('a retry of a 429 or 529 is a turn.retry naming the class, and claude keeps its loop', () => {
    const codec = adapterFor('claude').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    expect(codec.parse(claudeRetry(429, 'rate_limit'))).toEqual([
      { type: 'turn.retry', attempt: 1, maxAttempts: 10, delayMs: 600, reason: 'provider_rate_limited 429 rate_limit' },
    ]);
    expect(codec.parse(claudeRetry(529, 'overloaded'))).toEqual([
      expect.objectContaining({ reason: 'provider_overloaded 529 overloaded' }),
    ]);
    expect(codec.takeInput()).toEqual([]);
  });

  it('a user interrupt during a stopped retry still ends the turn interrupted', () => {
    const codec = adapterFor('claude').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    codec.parse(claudeRetry(401, 'authentication_failed'));
    codec.encodeInterrupt();
    expect(codec.parse(claudeInterrupted)).toEqual([
      expect.objectContaining({ type: 'turn.done', stopReason: 'interrupted' }),
    ]);
  });

  it('a failure retried away does not explain a later error of the same turn', () => {
    const codec = adapterFor('claude').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    codec.parse(claudeRetry(500, 'server_error'));
    codec.parse(JSON.stringify({ type: 'stream_event', event: { type: 'message_start', message: {} } }));
    expect(
      codec.parse(JSON.stringify({ type: 'result', subtype: 'error_max_turns', is_error: true, session_id: 's' })),
    ).toEqual([
      expect.objectContaining({ type: 'turn.done', error: expect.objectContaining({ code: 'error_max_turns' }) }),
    ]);
  });
});

describe('pi codec', () => {
  const errorMessage =
    '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key (req_500)"}}';
  const assistantEnd = JSON.stringify({
    type: 'message_end',
    message: { role: 'assistant', content: [], stopReason: 'error', errorMessage },
  });

  it('pi retrying a 401 (its regex saw "500" in the text) is stopped with abort_retry; the turn ends provider_auth', () => {
    const codec = adapterFor('pi').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    codec.parse(assistantEnd);
    expect(codec.parse(JSON.stringify({ type: 'agent_end', messages: [] }))).toEqual([]);
    expect(
      codec.parse(
        JSON.stringify({ type: 'auto_retry_start', attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage }),
      ),
    ).toEqual([]);
    const input = codec.takeInput();
    expect(input.map((l) => JSON.parse(l) as { type: string })).toEqual([
      expect.objectContaining({ type: 'abort_retry' }),
    ]);
    // An abort_retry that landed after the wait ended stopped nothing: pi retries again, and is told again.
    codec.parse(assistantEnd);
    codec.parse(JSON.stringify({ type: 'agent_end', messages: [] }));
    expect(
      codec.parse(
        JSON.stringify({ type: 'auto_retry_start', attempt: 2, maxAttempts: 3, delayMs: 4000, errorMessage }),
      ),
    ).toEqual([]);
    expect(codec.takeInput().map((l) => JSON.parse(l) as { type: string })).toEqual([
      expect.objectContaining({ type: 'abort_retry' }),
    ]);
    const done = codec.parse(
      JSON.stringify({ type: 'auto_retry_end', success: false, attempt: 1, finalError: 'Retry cancelled' }),
    );
    expect(done).toEqual([
      expect.objectContaining({
        type: 'turn.done',
        stopReason: 'error',
        error: expect.objectContaining({ code: 'provider_auth', retryable: false }),
      }),
    ]);
  });

  it("pi's retry reason carries no text of its own (a refused connection names the model route's host)", () => {
    const codec = adapterFor('pi').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    const msg = 'Connection error: connect ECONNREFUSED 127.0.0.1:4480';
    const [retry] = codec.parse(
      JSON.stringify({ type: 'auto_retry_start', attempt: 1, maxAttempts: 3, delayMs: 1, errorMessage: msg }),
    );
    expect(retry).toEqual({
      type: 'turn.retry',
      attempt: 1,
      maxAttempts: 3,
      delayMs: 1,
      reason: 'provider_unavailable',
    });
  });

  it('a 429 retry is a turn.retry naming the class; giving up ends provider_rate_limited, retryable', () => {
    const codec = adapterFor('pi').createCodec();
    codec.encodeUserMessage({ text: 'hi' });
    const msg = '429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}';
    expect(
      codec.parse(
        JSON.stringify({ type: 'auto_retry_start', attempt: 1, maxAttempts: 1, delayMs: 1, errorMessage: msg }),
      ),
    ).toEqual([
      {
        type: 'turn.retry',
        attempt: 1,
        maxAttempts: 1,
        delayMs: 1,
        reason: 'provider_rate_limited 429 rate_limit_error',
      },
    ]);
    expect(codec.takeInput()).toEqual([]);
    expect(
      codec.parse(JSON.stringify({ type: 'auto_retry_end', success: false, attempt: 1, finalError: msg })),
    ).toEqual([
      expect.objectContaining({
        type: 'turn.done',
        error: expect.objectContaining({ code: 'provider_rate_limited', retryable: true }),
      }),
    ]);
  });
});
