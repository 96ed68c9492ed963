import { describe, expect, it } from 'vitest';
import {
  adapterFor,
  AgentEventSchema,
  ApprovalAnswerSchema,
  ApprovalPolicySchema,
  ClaudeCodec,
  DEFAULT_APPROVAL_POLICY,
  denyMessage,
  HubToRunnerSchema,
  policyDecision,
  toolKind,
  type SpawnOptions,
} from '../src/index.ts';

const spawnBase: SpawnOptions = {
  executable: { command: '/opt/cli' },
  workspace: '/w/ws',
  home: '/w/home',
  configDir: '/w/cfg',
  modelBaseUrl: 'http://127.0.0.1:9999',
  modelApiKey: 'dummy-key',
  guard: 'runner',
};

describe('tool kinds', () => {
  it('maps each backend’s tool names once; anything else is other', () => {
    expect(['Read', 'Glob', 'Grep'].map((n) => toolKind('claude', n))).toEqual(['read', 'read', 'read']);
    expect(['Write', 'Edit'].map((n) => toolKind('claude', n))).toEqual(['write', 'write']);
    expect(toolKind('claude', 'Bash')).toBe('shell');
    expect(toolKind('claude', 'WebFetch')).toBe('web');
    expect(['read', 'ls', 'grep', 'find'].map((n) => toolKind('pi', n))).toEqual(['read', 'read', 'read', 'read']);
    expect(['write', 'edit'].map((n) => toolKind('pi', n))).toEqual(['write', 'write']);
    expect(toolKind('pi', 'bash')).toBe('shell');
    expect(toolKind('pi', 'Read')).toBe('other');
    expect(toolKind('claude', 'constructor')).toBe('other');
    expect(toolKind('claude', '__proto__')).toBe('other');
  });
});

describe('policy', () => {
  it('decides covered kinds, leaves the rest to a person; deny wins', () => {
    expect(policyDecision(DEFAULT_APPROVAL_POLICY, 'read')).toBe('allow');
    expect(policyDecision(DEFAULT_APPROVAL_POLICY, 'write')).toBeUndefined();
    expect(policyDecision({ autoAllow: [], autoDeny: ['web'] }, 'web')).toBe('deny');
  });

  it('refuses a kind in both lists and unknown kinds, naming the field', () => {
    const both = ApprovalPolicySchema.safeParse({ autoAllow: ['read'], autoDeny: ['read'] });
    expect(both.success).toBe(false);
    expect(both.error?.issues[0]?.path).toEqual(['autoDeny']);
    expect(ApprovalPolicySchema.safeParse({ autoAllow: ['files'], autoDeny: [] }).success).toBe(false);
  });

  it('answers: decision required, message bounded, nothing else', () => {
    expect(ApprovalAnswerSchema.safeParse({ decision: 'allow' }).success).toBe(true);
    expect(ApprovalAnswerSchema.safeParse({ decision: 'maybe' }).success).toBe(false);
    expect(ApprovalAnswerSchema.safeParse({ decision: 'deny', message: 'x'.repeat(2001) }).success).toBe(false);
    expect(ApprovalAnswerSchema.safeParse({ decision: 'deny', extra: 1 }).success).toBe(false);
  });

  it('a deny always carries a message for the model', () => {
    expect(denyMessage('user', 'use b.txt')).toBe('use b.txt');
    expect(denyMessage('expired', undefined)).toMatch(/in time/);
    expect(denyMessage('user', '  ')).toMatch(/denied/);
  });
});

describe('events and wire frames', () => {
  it('approval.request and approval.resolved are events; ids are URL-safe', () => {
    const req = {
      type: 'approval.request',
      approvalId: '009fbaa6-fb9b-4a0f-ad28-a4bcafc7a6d7',
      toolId: 'toolu_1',
      name: 'Write',
      kind: 'write',
      input: { file_path: '/w/a.txt' },
      expiresAt: '2026-11-30T20:00:00.000Z',
    };
    expect(AgentEventSchema.safeParse(req).success).toBe(true);
    expect(AgentEventSchema.safeParse({ ...req, approvalId: '../x' }).success).toBe(false);
    expect(
      AgentEventSchema.safeParse({
        type: 'approval.resolved',
        approvalId: 'a1',
        decision: 'deny',
        reason: 'runner_lost',
      }).success,
    ).toBe(true);
    expect(
      AgentEventSchema.safeParse({ type: 'approval.resolved', approvalId: 'a1', decision: 'deny', reason: 'bored' })
        .success,
    ).toBe(false);
  });

  it('the hub sends decisions and the welcome carries the mode', () => {
    expect(
      HubToRunnerSchema.safeParse({ type: 'approval_decision', approvalId: 'a1', decision: 'deny', message: 'no' })
        .success,
    ).toBe(true);
    expect(HubToRunnerSchema.safeParse({ type: 'welcome', ackedSeq: 0, approvals: 'ask' }).success).toBe(true);
    expect(HubToRunnerSchema.safeParse({ type: 'welcome', ackedSeq: 0, approvals: 'sometimes' }).success).toBe(false);
  });
});

describe('claude spawn in approval mode ask', () => {
  it('auto: the allow-list runs without prompts; the guard allows without asking', () => {
    const spec = adapterFor('claude').spawnSpec(spawnBase);
    expect(spec.args).toContain('--allowedTools');
    expect(spec.args).not.toContain('--permission-prompt-tool');
    expect(spec.toolHooks?.ask).toBe(false);
  });

  it('ask: claude asks over stdio and the guard answers "ask" for what it allows', () => {
    const spec = adapterFor('claude').spawnSpec({ ...spawnBase, approvals: 'ask' });
    expect(spec.args).not.toContain('--allowedTools');
    const i = spec.args.indexOf('--permission-prompt-tool');
    expect(spec.args[i + 1]).toBe('stdio');
    // The guard still decides first, on every call.
    expect(spec.toolHooks).toEqual({ matcher: '.*', ask: true });
  });
});

describe('claude codec: can_use_tool', () => {
  // Shapes as claude 2.1.197 printed them (DESIGN "Tool approvals").
  const canUseTool = {
    type: 'control_request',
    request_id: '409d18cf-615b-4e7f-89b3-34bb5cac995c',
    request: {
      subtype: 'can_use_tool',
      tool_name: 'Write',
      display_name: 'Write',
      input: { file_path: '/w/a.txt', content: 'x' },
      description: 'a.txt',
      decision_reason: 'switchyard: this session asks a person before each tool call',
      decision_reason_type: 'hook',
      tool_use_id: 'toolu_offline_1',
    },
  };

  it('becomes approval.request; allow hands the input back, deny carries the message', () => {
    const codec = new ClaudeCodec();
    const [event] = codec.parse(JSON.stringify(canUseTool));
    expect(event).toMatchObject({
      type: 'approval.request',
      approvalId: canUseTool.request_id,
      toolId: 'toolu_offline_1',
      name: 'Write',
      kind: 'write',
      input: { file_path: '/w/a.txt', content: 'x' },
    });
    expect(AgentEventSchema.safeParse(event).success).toBe(true);
    const line = codec.encodeApproval({ approvalId: canUseTool.request_id, decision: 'allow' });
    expect(JSON.parse(line ?? '')).toEqual({
      type: 'control_response',
      response: {
        subtype: 'success',
        request_id: canUseTool.request_id,
        response: { behavior: 'allow', updatedInput: { file_path: '/w/a.txt', content: 'x' } },
      },
    });
    expect(line?.endsWith('\n')).toBe(true);
    // Answered once: a repeat (a resent decision) writes nothing.
    expect(codec.encodeApproval({ approvalId: canUseTool.request_id, decision: 'allow' })).toBeUndefined();

    codec.parse(JSON.stringify({ ...canUseTool, request_id: 'r2' }));
    const deny = JSON.parse(codec.encodeApproval({ approvalId: 'r2', decision: 'deny', message: 'use b.txt' }) ?? '');
    expect(deny.response.response).toEqual({ behavior: 'deny', message: 'use b.txt' });
  });

  it('a withdrawn question (interrupt) is not answered; other control requests get an error at once', () => {
    const codec = new ClaudeCodec();
    codec.parse(JSON.stringify(canUseTool));
    codec.parse(JSON.stringify({ type: 'control_cancel_request', request_id: canUseTool.request_id }));
    expect(codec.encodeApproval({ approvalId: canUseTool.request_id, decision: 'allow' })).toBeUndefined();
    expect(
      codec.parse(JSON.stringify({ type: 'control_request', request_id: 'h1', request: { subtype: 'mcp_message' } })),
    ).toEqual([]);
    const [reply] = codec.takeInput();
    expect(JSON.parse(reply ?? '')).toMatchObject({
      type: 'control_response',
      response: { subtype: 'error', request_id: 'h1' },
    });
  });
});
