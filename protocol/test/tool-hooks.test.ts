import { describe, expect, it } from 'vitest';
import { ClaudeCodec, GUARD_CALLBACK_ID, initializeHooks, type ToolCall, type ToolCheck } from '../src/index.ts';

// A hook_callback as claude 2.1.197 printed it (input abridged to what the guard reads).
const callback = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    type: 'control_request',
    request_id: 'cb-1',
    request: {
      subtype: 'hook_callback',
      callback_id: GUARD_CALLBACK_ID,
      input: {
        hook_event_name: 'PreToolUse',
        tool_name: 'Read',
        tool_input: { file_path: '/w/ws/a.txt' },
        cwd: '/w/ws',
        tool_use_id: 'toolu_1',
      },
      tool_use_id: 'toolu_1',
      ...over,
    },
  });

/** The one line the codec wrote back, parsed; the test fails unless there is exactly one. */
function answer(codec: ClaudeCodec, line: string): { subtype: string; request_id: string; response: unknown } {
  expect(codec.parse(line)).toEqual([]);
  const lines = codec.takeInput();
  expect(lines).toHaveLength(1);
  expect(lines[0]?.endsWith('\n')).toBe(true);
  const msg = JSON.parse(lines[0] ?? '');
  expect(msg.type).toBe('control_response');
  return msg.response;
}

const decision = (r: { response: unknown }) =>
  (r.response as { hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string } })
    .hookSpecificOutput;

function guarded(check: ToolCheck, ask = false): ClaudeCodec {
  const codec = new ClaudeCodec();
  codec.checkToolCalls({ matcher: '.*', ask }, check);
  return codec;
}

describe("claude's guard hooks answered over the control protocol", () => {
  it('registers one callback for the matcher', () => {
    expect(initializeHooks({ matcher: '^(?!Bash$)', ask: false })).toEqual({
      PreToolUse: [{ matcher: '^(?!Bash$)', hookCallbackIds: [GUARD_CALLBACK_ID] }],
    });
  });

  it('hands the check the tool, its input and the cwd; an allow is no decision, a deny carries the reason', () => {
    const seen: ToolCall[] = [];
    let verdict: ReturnType<ToolCheck> = { allow: true };
    const codec = guarded((call) => {
      seen.push(call);
      return verdict;
    });
    const allowed = answer(codec, callback());
    expect(allowed).toEqual({ subtype: 'success', request_id: 'cb-1', response: {} });
    expect(seen).toEqual([{ tool: 'Read', input: { file_path: '/w/ws/a.txt' }, cwd: '/w/ws' }]);

    verdict = { allow: false, reason: 'switchyard guard: outside the workspace' };
    const denied = answer(codec, callback());
    expect(denied.subtype).toBe('success');
    expect(decision(denied)).toEqual({
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: 'switchyard guard: outside the workspace',
    });
  });

  it('approval mode ask: what the guard allows is answered "ask", what it refuses is still denied', () => {
    let verdict: ReturnType<ToolCheck> = { allow: true };
    const codec = guarded(() => verdict, true);
    expect(decision(answer(codec, callback()))?.permissionDecision).toBe('ask');
    verdict = { allow: false, reason: 'switchyard guard: no' };
    expect(decision(answer(codec, callback()))?.permissionDecision).toBe('deny');
  });

  // claude runs a call whose hook answer is an error: every failure must be a deny, never one.
  it('refuses when nothing is attached, the check throws, or the request is not the guard’s', () => {
    const bare = answer(new ClaudeCodec(), callback());
    expect(bare.subtype).toBe('success');
    expect(decision(bare)?.permissionDecision).toBe('deny');
    expect(decision(bare)?.permissionDecisionReason).toMatch(/^switchyard guard: no guard is attached/);

    const throwing = guarded(() => {
      throw new Error('boom');
    });
    const thrown = answer(throwing, callback());
    expect(decision(thrown)).toMatchObject({ permissionDecision: 'deny' });
    expect(decision(thrown)?.permissionDecisionReason).toContain('boom');

    const allowAll = guarded(() => ({ allow: true }));
    for (const over of [
      { callback_id: 'someone-else' },
      { input: { hook_event_name: 'PreToolUse', tool_input: {} } },
      { input: 'not an object' },
    ]) {
      const r = answer(allowAll, callback(over));
      expect(r.subtype).toBe('success');
      expect(decision(r)?.permissionDecision).toBe('deny');
    }
  });
});
