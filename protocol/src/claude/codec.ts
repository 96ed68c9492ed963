import type { AgentCodec, ApprovalAnswerLine, CliExit, ToolCheck, ToolHooks, UserMessage } from '../adapter.ts';
import { ApprovalIdSchema, DEFAULT_APPROVAL_TIMEOUT_SECONDS, DEFAULT_DENY_MESSAGE, toolKind } from '../approvals.ts';
import { TurnTracker } from '../codec-base.ts';
import {
  capOutput,
  type AgentEvent,
  type ContentBlock,
  type ErrorInfo,
  type StopReason,
  type Usage,
} from '../events.ts';
import { arr, head, isObj, nonNegInt, num, obj, str, type Obj } from '../json-fields.ts';
import { controlError, interruptLine, textBlocks } from './input-lines.ts';
import { answerHookCallback } from './tool-hooks.ts';
import { classifyProviderError, parseProviderErrorText, type ProviderErrorFacts } from '../provider-errors.ts';

interface OpenBlock {
  kind: 'text' | 'thinking' | 'tool_use' | 'other';
  text: string;
  toolId?: string;
  name?: string;
}

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: 'end_turn',
  stop_sequence: 'end_turn',
  tool_use: 'end_turn',
  max_tokens: 'max_tokens',
  refusal: 'refusal',
};

/** Codec for `claude -p --input-format stream-json --output-format stream-json`. */
export class ClaudeCodec implements AgentCodec {
  private readonly turn = new TurnTracker();
  private blocks = new Map<number, OpenBlock>();
  private messageBlocks: ContentBlock[] = [];
  private sessionId: string | undefined;
  /** `can_use_tool` requests claude waits on: request_id → the tool input an allow hands back. */
  private readonly asking = new Map<string, Record<string, unknown>>();
  /** This turn's last provider failure as claude reported it (api_retry, synthetic error message). */
  private providerFacts: ProviderErrorFacts = {};
  /** What answers claude's tool-call hooks (tool-hooks.ts); none: every hook call is refused. */
  private toolGuard: { hooks: ToolHooks; check: ToolCheck } | undefined;

  get turnOpen(): boolean {
    return this.turn.turnOpen;
  }
  get resumeHandle(): string | undefined {
    return this.sessionId;
  }

  initLines(): string[] {
    return [];
  }

  checkToolCalls(hooks: ToolHooks, check: ToolCheck): void {
    this.toolGuard = { hooks, check };
  }

  encodeUserMessage(m: UserMessage): string {
    this.turn.open();
    this.providerFacts = {};
    const text = textBlocks(m.text);
    const content =
      m.images && m.images.length > 0
        ? [
            ...m.images.map((img) => ({
              type: 'image',
              source: { type: 'base64', media_type: img.mediaType, data: img.data },
            })),
            ...(typeof text === 'string' ? [{ type: 'text', text }] : text),
          ]
        : text;
    // JSON.stringify is the only way user text reaches the CLI (invariant 3).
    return `${JSON.stringify({ type: 'user', message: { role: 'user', content } })}\n`;
  }

  encodeInterrupt(): string {
    this.turn.interruptRequested = this.turn.turnOpen;
    return interruptLine();
  }

  parse(line: string): AgentEvent[] {
    return this.turn.parseLine(line, this.dispatch);
  }

  takeInput(): string[] {
    return this.turn.takeInput();
  }

  private readonly dispatch = (msg: Obj): AgentEvent[] => {
    switch (msg.type) {
      case 'stream_event':
        return this.streamEvent(obj(msg, 'event'));
      case 'system':
        return this.system(msg);
      case 'user':
        return this.toolResults(msg);
      case 'result':
        return this.result(msg);
      case 'assistant':
        // A synthetic message (claude's own text for a failed request) carries its error category.
        if (typeof msg.error === 'string' && msg.error !== 'unknown' && obj(msg, 'message')?.model === '<synthetic>')
          this.providerFacts.type = msg.error;
        // Otherwise `assistant` snapshots repeat what the stream already delivered (invariant 2).
        return [];
      case 'control_request':
        return this.controlRequest(msg);
      case 'control_cancel_request': {
        // claude withdrew a question (an interrupt): an answer now would be a stray line.
        const id = str(msg, 'request_id');
        if (id !== undefined) this.asking.delete(id);
        return [];
      }
      default:
        // control_response and unknown types are skipped (invariant 4).
        return [];
    }
  };

  /**
   * `--permission-prompt-tool stdio` (approval mode `ask`), verified on 2.1.197:
   * `{"type":"control_request","request_id","request":{"subtype":"can_use_tool","tool_name",
   * "input","tool_use_id",...}}`, answered by encodeApproval. A `hook_callback` is the guard's
   * (tool-hooks.ts), answered at once. Any other request subtype is answered with an error at
   * once so claude never waits on something the runner cannot do.
   */
  private controlRequest(msg: Obj): AgentEvent[] {
    const requestId = str(msg, 'request_id');
    const request = obj(msg, 'request');
    if (requestId === undefined || request === undefined) return [];
    if (str(request, 'subtype') === 'hook_callback') {
      this.turn.queueInput(answerHookCallback(requestId, request, this.toolGuard));
      return [];
    }
    if (str(request, 'subtype') !== 'can_use_tool' || !ApprovalIdSchema.safeParse(requestId).success) {
      this.turn.queueInput(controlError(requestId, `unsupported control request ${String(request.subtype)}`));
      return [];
    }
    const name = str(request, 'tool_name') ?? 'unknown';
    const input = obj(request, 'input') ?? {};
    this.asking.set(requestId, input);
    return [
      {
        type: 'approval.request',
        approvalId: requestId,
        toolId: str(request, 'tool_use_id') ?? '',
        name,
        kind: toolKind('claude', name),
        input,
        // Provisional: the hub replaces it with its own clock and approvalTimeoutSeconds.
        expiresAt: new Date(Date.now() + DEFAULT_APPROVAL_TIMEOUT_SECONDS * 1000).toISOString(),
      },
    ];
  }

  encodeApproval(answer: ApprovalAnswerLine): string | undefined {
    const input = this.asking.get(answer.approvalId);
    if (input === undefined) return undefined;
    this.asking.delete(answer.approvalId);
    // A deny's message reaches the model as the tool's error result (is_error: true).
    const response =
      answer.decision === 'allow'
        ? { behavior: 'allow', updatedInput: input }
        : { behavior: 'deny', message: answer.message ?? DEFAULT_DENY_MESSAGE };
    return `${JSON.stringify({
      type: 'control_response',
      response: { subtype: 'success', request_id: answer.approvalId, response },
    })}\n`;
  }

  end(exit: CliExit): AgentEvent[] {
    return this.turn.end(exit);
  }

  private system(msg: Obj): AgentEvent[] {
    const subtype = str(msg, 'subtype');
    if (subtype === 'init') {
      const sessionId = str(msg, 'session_id');
      // claude repeats init at every turn; report it only when it says something new.
      if (sessionId === this.sessionId) return [];
      this.sessionId = sessionId;
      const tools = arr(msg, 'tools')?.filter((t): t is string => typeof t === 'string');
      const model = str(msg, 'model');
      return [
        {
          type: 'session.init',
          backend: 'claude',
          ...(sessionId !== undefined && { cliSessionId: sessionId }),
          ...(model !== undefined && { model }),
          ...(tools !== undefined && { tools }),
        },
      ];
    }
    if (subtype === 'api_retry') {
      const maxAttempts = num(msg, 'max_retries');
      const delayMs = num(msg, 'retry_delay_ms');
      const status = num(msg, 'error_status');
      const error = msg.error;
      // claude's category `unknown` (a cut stream, say) says nothing.
      const type =
        typeof error === 'string'
          ? error === 'unknown'
            ? undefined
            : error
          : isObj(error)
            ? str(error, 'message')
            : undefined;
      this.providerFacts = { status, type };
      const classified = providerError(this.providerFacts);
      if (classified && !classified.retryable) {
        // claude retries a 401 (ten times, minutes of backoff by default); no retry
        // can fix a bad key, so stop it now and end the turn with the classified error.
        this.turn.stopRetrying(classified, interruptLine());
        return [];
      }
      const reason = [classified?.code, status, type].filter((p) => p !== undefined).join(' ');
      return [
        {
          type: 'turn.retry',
          attempt: nonNegInt(num(msg, 'attempt')),
          ...(maxAttempts !== undefined && { maxAttempts: nonNegInt(maxAttempts) }),
          ...(delayMs !== undefined && delayMs >= 0 && { delayMs }),
          reason: reason || 'provider error',
        },
      ];
    }
    return [];
  }

  private streamEvent(ev: Obj | undefined): AgentEvent[] {
    if (!ev) return [];
    const index = nonNegInt(num(ev, 'index'));
    switch (ev.type) {
      case 'message_start':
        // The model answered: failures before this (retried away) do not explain how the turn ends.
        this.providerFacts = {};
        this.blocks = new Map();
        this.messageBlocks = [];
        return [];
      case 'content_block_start': {
        const cb = obj(ev, 'content_block');
        const kind = cb?.type;
        if (kind === 'tool_use' && cb) {
          const toolId = str(cb, 'id') ?? `tool-${index}`;
          const name = str(cb, 'name') ?? 'unknown';
          this.blocks.set(index, { kind: 'tool_use', text: '', toolId, name });
          return [{ type: 'tool.start', index, toolId, name }];
        }
        this.blocks.set(index, { kind: kind === 'text' || kind === 'thinking' ? kind : 'other', text: '' });
        return [];
      }
      case 'content_block_delta': {
        const delta = obj(ev, 'delta');
        const block = this.blocks.get(index);
        if (!delta || !block) return [];
        if (delta.type === 'text_delta') {
          const text = str(delta, 'text') ?? '';
          block.text += text;
          return text ? [{ type: 'text.delta', index, text }] : [];
        }
        if (delta.type === 'thinking_delta') {
          const text = str(delta, 'thinking') ?? '';
          block.text += text;
          return text ? [{ type: 'thinking.delta', index, text }] : [];
        }
        if (delta.type === 'input_json_delta' && block.kind === 'tool_use') {
          const part = str(delta, 'partial_json') ?? '';
          block.text += part;
          // The first input_json_delta is often empty; it carries nothing.
          return part ? [{ type: 'tool.input', index, toolId: block.toolId ?? '', delta: part }] : [];
        }
        return [];
      }
      case 'content_block_stop':
        return this.finishBlock(index);
      case 'message_stop': {
        const content = this.messageBlocks;
        this.messageBlocks = [];
        return content.length > 0 ? [{ type: 'message.assistant', content }] : [];
      }
      default:
        return [];
    }
  }

  private finishBlock(index: number): AgentEvent[] {
    const block = this.blocks.get(index);
    if (!block) return [];
    this.blocks.delete(index);
    if (block.kind === 'text' || block.kind === 'thinking') {
      this.messageBlocks.push({ type: block.kind, text: block.text });
      return [];
    }
    if (block.kind !== 'tool_use') return [];
    const input = parseToolInput(block.text);
    const toolId = block.toolId ?? '';
    const name = block.name ?? 'unknown';
    this.messageBlocks.push({ type: 'tool_use', id: toolId, name, input });
    return [{ type: 'tool.end', index, toolId, name, input }];
  }

  private toolResults(msg: Obj): AgentEvent[] {
    const content = arr(obj(msg, 'message') ?? {}, 'content');
    if (!content) return [];
    const events: AgentEvent[] = [];
    for (const block of content) {
      if (!isObj(block) || block.type !== 'tool_result') continue;
      events.push({
        type: 'tool.result',
        toolId: str(block, 'tool_use_id') ?? '',
        isError: block.is_error === true,
        output: capOutput(toolResultText(block.content)),
      });
    }
    return events;
  }

  private result(msg: Obj): AgentEvent[] {
    const u = obj(msg, 'usage');
    const usage: Usage | undefined = u && {
      inputTokens: nonNegInt(num(u, 'input_tokens')),
      outputTokens: nonNegInt(num(u, 'output_tokens')),
      cacheReadTokens: nonNegInt(num(u, 'cache_read_input_tokens')),
      cacheWriteTokens: nonNegInt(num(u, 'cache_creation_input_tokens')),
    };
    const costUsd = num(msg, 'total_cost_usd');
    const durationMs = num(msg, 'duration_ms');
    const common = {
      ...(usage !== undefined && { usage }),
      ...(costUsd !== undefined && costUsd >= 0 && { costUsd }),
      ...(durationMs !== undefined && durationMs >= 0 && { durationMs }),
    };
    const sessionId = str(msg, 'session_id');
    if (sessionId) this.sessionId = sessionId;
    if (msg.is_error === true || str(msg, 'subtype') !== 'success') {
      const text =
        str(msg, 'result') ??
        arr(msg, 'errors')
          ?.filter((e) => typeof e === 'string')
          .join('; ') ??
        '';
      const status = num(msg, 'api_error_status');
      // api_error_status is null when claude gives up on its own (three 529s): the last retry's status stands.
      // The key is present (null or a status) only when the turn ended on a failed model request.
      const apiFailure =
        msg.api_error_status !== undefined ||
        this.providerFacts.status !== undefined ||
        this.providerFacts.type !== undefined;
      const facts: ProviderErrorFacts = {
        ...this.providerFacts,
        ...(status !== undefined && { status }),
        message: text,
      };
      const message = head(text) || `claude ended the turn with ${str(msg, 'subtype') ?? 'an error'}`;
      return this.turn.close({
        stopReason: 'error',
        ...common,
        error: apiFailure
          ? (providerError(facts) ?? { code: 'provider_error', message, retryable: true })
          : { code: str(msg, 'subtype') ?? 'cli_error', message, retryable: true },
      });
    }
    const stopReason = STOP_REASONS[str(msg, 'stop_reason') ?? 'end_turn'] ?? 'unknown';
    return this.turn.close({ stopReason, ...common });
  }
}

/** claude's own text ("API Error: 400 …") may name a status the structured fields lack. */
function providerError(facts: ProviderErrorFacts): ErrorInfo | undefined {
  const fromText = facts.message ? parseProviderErrorText(facts.message) : {};
  return classifyProviderError({ ...facts, status: facts.status ?? fromText.status });
}

function parseToolInput(json: string): Record<string, unknown> {
  if (!json) return {};
  try {
    const v: unknown = JSON.parse(json);
    return isObj(v) ? v : { value: v };
  } catch {
    return { _unparsed: json };
  }
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) =>
      isObj(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : isObj(b) ? `[${String(b.type)}]` : '',
    )
    .join('\n');
}
