import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PI_APPROVAL_CONFIRM_TITLE,
  PI_APPROVAL_DENY_REASON_TITLE,
  PI_APPROVAL_ENV,
  PiCodec,
} from '@switchyard/protocol';
import switchyardGuard, {
  APPROVAL_CONFIRM_TITLE,
  APPROVAL_DENY_REASON_TITLE,
  APPROVAL_ENV,
} from '../../src/sandbox/guard/pi-extension.ts';
import { POLICY_ENV } from '../../src/sandbox/guard/policy.ts';

// pi's approval round trip (DESIGN "Tool approvals"): the guard extension, loaded with a
// stand-in of pi's API, talks to the real PiCodec the way pi's rpc mode would carry it.

type Handler = (event: unknown, ctx: unknown) => unknown;

function load(ask: boolean): Handler {
  const workspace = mkdtempSync(join(tmpdir(), 'pi-approvals-'));
  process.env[POLICY_ENV] = JSON.stringify({ v: 1, backend: 'pi', workspace, tools: ['write', 'read'] });
  if (ask) process.env[APPROVAL_ENV] = 'ask';
  else delete process.env[APPROVAL_ENV];
  const handlers: Handler[] = [];
  switchyardGuard({ on: (_name: string, h: Handler) => handlers.push(h) } as never);
  const [h] = handlers;
  if (!h) throw new Error('no handler');
  return h;
}

/** pi's rpc mode in miniature: each dialog becomes an extension_ui_request line the codec parses. */
function uiThrough(codec: PiCodec, answer: (approvalId: string) => string | undefined) {
  let n = 0;
  const ask = (method: string, fields: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const id = `ui-${++n}`;
    const events = codec.parse(JSON.stringify({ type: 'extension_ui_request', id, method, ...fields }));
    const reply = codec.takeInput()[0] ?? (events[0]?.type === 'approval.request' ? answer(id) : undefined);
    return Promise.resolve(reply === undefined ? { cancelled: true } : JSON.parse(reply));
  };
  return {
    confirm: async (title: string, message: string) => (await ask('confirm', { title, message })).confirmed === true,
    input: async (title: string, placeholder?: string) => (await ask('input', { title, placeholder })).value as string,
  };
}

afterEach(() => {
  delete process.env[APPROVAL_ENV];
  delete process.env[POLICY_ENV];
});

describe('pi guard extension in approval mode ask', () => {
  it('shares its titles and variable with the codec', () => {
    expect([APPROVAL_ENV, APPROVAL_CONFIRM_TITLE, APPROVAL_DENY_REASON_TITLE]).toEqual([
      PI_APPROVAL_ENV,
      PI_APPROVAL_CONFIRM_TITLE,
      PI_APPROVAL_DENY_REASON_TITLE,
    ]);
  });

  it('auto: nothing is asked', async () => {
    const h = load(false);
    expect(await h({ toolCallId: 't1', toolName: 'write', input: { path: 'a.txt' } }, {})).toBeUndefined();
  });

  it('allow runs the tool; deny blocks it with the person’s message', async () => {
    const h = load(true);
    const codec = new PiCodec();
    const allow = uiThrough(codec, (id) => codec.encodeApproval({ approvalId: id, decision: 'allow' }));
    expect(await h({ toolCallId: 't1', toolName: 'write', input: { path: 'a.txt' } }, { ui: allow })).toBeUndefined();
    const deny = uiThrough(codec, (id) =>
      codec.encodeApproval({ approvalId: id, decision: 'deny', message: 'no: use b.txt' }),
    );
    expect(await h({ toolCallId: 't2', toolName: 'write', input: { path: 'a.txt' } }, { ui: deny })).toEqual({
      block: true,
      reason: 'no: use b.txt',
    });
  });

  it('the guard first: a refused call is never asked about', async () => {
    const h = load(true);
    let asked = false;
    const ui = {
      confirm: async () => {
        asked = true;
        return true;
      },
      input: async () => '',
    };
    const verdict = (await h({ toolCallId: 't3', toolName: 'write', input: { path: '/etc/passwd' } }, { ui })) as {
      block: boolean;
      reason: string;
    };
    expect(verdict.block).toBe(true);
    expect(verdict.reason).toMatch(/^switchyard guard:/);
    expect(asked).toBe(false);
  });

  it('an interrupt while asking is a refusal without a second question', async () => {
    const h = load(true);
    const ctl = new AbortController();
    let inputs = 0;
    const ui = {
      confirm: async () => {
        ctl.abort();
        return false;
      },
      input: async () => {
        inputs++;
        return 'x';
      },
    };
    const verdict = await h(
      { toolCallId: 't4', toolName: 'write', input: { path: 'a.txt' } },
      { ui, signal: ctl.signal },
    );
    expect(verdict).toMatchObject({ block: true });
    expect(inputs).toBe(0);
  });
});
