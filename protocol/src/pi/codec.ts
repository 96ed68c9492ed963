import type { AgentCodec, ApprovalAnswerLine, CliExit, UserMessage } from '../adapter.ts';
import { TurnTracker } from '../codec-base.ts';
import { capOutput, type AgentEvent, type ContentBlock, type ErrorInfo, type StopReason } from '../events.ts';
import { arr, head, isObj, nonNegInt, num, obj, str, type Obj } from '../json-fields.ts';
import { classifyProviderError, parseProviderErrorText } from '../provider-errors.ts';
import { PiApprovals } from './approval.ts';

const STOP_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  toolUse: 'end_turn',
  length: 'max_tokens',
  error: 'error',
  aborted: 'interrupted',
};

/**
 * pi 0.73's own rule (AgentSession._isRetryableError) for which errors it
 * retries. Its agent_end is not final for these: auto_retry_start (another
 * attempt) or auto_retry_end (gave up) follows, so the turn stays open.
 */
const PI_RETRYABLE =
  /overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay/i;

interface TurnTotals {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  startedAt: number;
}

let idCounter = 0;
const nextId = (kind: string) => `sy-${kind}-${(++idCounter).toString(36)}`;

/** Codec for `pi --mode rpc`. */
export class PiCodec implements AgentCodec {
  private readonly turn = new TurnTracker();
  private readonly approvals = new PiApprovals();
  private sessionFile: string | undefined;
  private sessionId: string | undefined;
  private startedTools = new Map<number, { id: string; name: string }>();
  private lastAssistant: { stopReason: string; errorMessage?: string } | undefined;
  private totals: TurnTotals = emptyTotals();
  private retrying = false;

  get turnOpen(): boolean {
    return this.turn.turnOpen;
  }
  get resumeHandle(): string | undefined {
    return this.sessionFile;
  }

  initLines(): string[] {
    return [`${JSON.stringify({ id: nextId('state'), type: 'get_state' })}\n`];
  }

  encodeUserMessage(m: UserMessage): string {
    this.turn.open();
    this.totals = emptyTotals();
    this.lastAssistant = undefined;
    this.retrying = false;
    const cmd: Obj = { id: nextId('prompt'), type: 'prompt', message: m.text };
    if (m.images && m.images.length > 0) {
      cmd.images = m.images.map((img) => ({ type: 'image', data: img.data, mimeType: img.mediaType }));
    }
    // JSON.stringify is the only way user text reaches the CLI (invariant 3):
    // it stays the `message` string field of a `prompt`, never a command.
    return `${JSON.stringify(cmd)}\n`;
  }

  encodeInterrupt(): string {
    this.turn.interruptRequested = this.turn.turnOpen;
    return `${JSON.stringify({ id: nextId('abort'), type: 'abort' })}\n`;
  }

  parse(line: string): AgentEvent[] {
    return this.turn.parseLine(line, this.dispatch);
  }

  encodeApproval(answer: ApprovalAnswerLine): string | undefined {
    return this.approvals.encode(answer);
  }

  takeInput(): string[] {
    return this.turn.takeInput();
  }

  private readonly dispatch = (msg: Obj): AgentEvent[] => {
    switch (msg.type) {
      case 'message_update':
        return this.messageUpdate(msg);
      case 'message_end':
        return this.messageEnd(msg);
      case 'tool_execution_end':
        return this.toolResult(msg);
      case 'agent_end':
        return this.agentEnd();
      case 'auto_retry_start': {
        this.retrying = true;
        const errorMessage = str(msg, 'errorMessage');
        const facts = errorMessage !== undefined ? parseProviderErrorText(errorMessage) : undefined;
        const classified = facts !== undefined ? classifyProviderError(facts) : undefined;
        if (classified && !classified.retryable) {
          // pi picks what to retry by a regex over the error text, so a 401 whose
          // body happens to contain "500" is retried; stop that, it cannot succeed.
          // Every time: an abort_retry that lands after the wait ended stops nothing.
          this.turn.stopRetrying(
            classified,
            `${JSON.stringify({ id: nextId('abort-retry'), type: 'abort_retry' })}\n`,
            false,
          );
          return [];
        }
        return [
          {
            type: 'turn.retry',
            attempt: nonNegInt(num(msg, 'attempt')),
            ...optionalNum('maxAttempts', num(msg, 'maxAttempts')),
            ...optionalNum('delayMs', num(msg, 'delayMs')),
            // The class, status and type, as claude's: pi's own text can name the model route's host.
            reason:
              [classified?.code, facts?.status, facts?.type].filter((p) => p !== undefined).join(' ') ||
              'provider error',
          },
        ];
      }
      case 'auto_retry_end':
        return this.retryEnd(msg);
      case 'response':
        return this.response(msg);
      case 'extension_ui_request': {
        const { events, reply } = this.approvals.request(msg);
        if (reply !== undefined) this.turn.queueInput(reply);
        return events;
      }
      case 'extension_error':
        return [
          {
            type: 'error',
            code: 'extension_error',
            message: `${str(msg, 'extensionPath') ?? 'extension'}: ${head(String(msg.error ?? ''))}`,
            retryable: false,
          },
        ];
      default:
        // Cumulative snapshots (text_end.content, partials) are never turned into
        // text (invariant 2); unknown types are skipped (invariant 4).
        return [];
    }
  };

  end(exit: CliExit): AgentEvent[] {
    return this.turn.end(exit);
  }

  private response(msg: Obj): AgentEvent[] {
    const command = str(msg, 'command');
    if (msg.success === true) {
      if (command !== 'get_state') return [];
      const data = obj(msg, 'data');
      if (!data) return [];
      this.sessionFile = str(data, 'sessionFile') ?? this.sessionFile;
      this.sessionId = str(data, 'sessionId') ?? this.sessionId;
      const model = obj(data, 'model');
      const modelId = model ? str(model, 'id') : undefined;
      return [
        {
          type: 'session.init',
          backend: 'pi',
          ...(this.sessionId !== undefined && { cliSessionId: this.sessionId }),
          ...(modelId !== undefined && { model: modelId }),
        },
      ];
    }
    const error = str(msg, 'error') ?? 'command failed';
    if (command === 'prompt') {
      return this.turn.close({
        stopReason: 'error',
        error: { code: 'cli_rejected', message: head(error), retryable: false },
      });
    }
    return [
      { type: 'error', code: 'cli_rejected', message: `${command ?? 'command'}: ${head(error)}`, retryable: false },
    ];
  }

  private messageUpdate(msg: Obj): AgentEvent[] {
    const ev = obj(msg, 'assistantMessageEvent');
    if (!ev) return [];
    const index = nonNegInt(num(ev, 'contentIndex'));
    switch (ev.type) {
      case 'text_delta': {
        const text = str(ev, 'delta') ?? '';
        return text ? [{ type: 'text.delta', index, text }] : [];
      }
      case 'thinking_delta': {
        const text = str(ev, 'delta') ?? '';
        return text ? [{ type: 'thinking.delta', index, text }] : [];
      }
      case 'toolcall_start':
        return this.startTool(index, toolCallIn(obj(ev, 'partial') ?? obj(msg, 'message'), index));
      case 'toolcall_delta': {
        const delta = str(ev, 'delta') ?? '';
        const events = this.startTool(index, toolCallIn(obj(ev, 'partial') ?? obj(msg, 'message'), index));
        const tool = this.startedTools.get(index);
        if (delta && tool) events.push({ type: 'tool.input', index, toolId: tool.id, delta });
        return events;
      }
      case 'toolcall_end': {
        const call = obj(ev, 'toolCall');
        const id = call ? str(call, 'id') : undefined;
        const name = call ? str(call, 'name') : undefined;
        const events = this.startTool(index, id && name ? { id, name } : undefined);
        const tool = this.startedTools.get(index) ?? { id: id ?? `tool-${index}`, name: name ?? 'unknown' };
        this.startedTools.delete(index);
        events.push({
          type: 'tool.end',
          index,
          toolId: tool.id,
          name: tool.name,
          input: obj(call ?? {}, 'arguments') ?? {},
        });
        return events;
      }
      default:
        return [];
    }
  }

  private startTool(index: number, call: { id: string; name: string } | undefined): AgentEvent[] {
    if (this.startedTools.has(index) || !call) return [];
    this.startedTools.set(index, call);
    return [{ type: 'tool.start', index, toolId: call.id, name: call.name }];
  }

  private messageEnd(msg: Obj): AgentEvent[] {
    const message = obj(msg, 'message');
    if (message?.role !== 'assistant') return [];
    this.startedTools.clear();
    const stopReason = str(message, 'stopReason') ?? 'stop';
    const errorMessage = str(message, 'errorMessage');
    this.lastAssistant = { stopReason, ...(errorMessage !== undefined && { errorMessage }) };
    const usage = obj(message, 'usage');
    if (usage) {
      this.totals.inputTokens += nonNegInt(num(usage, 'input'));
      this.totals.outputTokens += nonNegInt(num(usage, 'output'));
      this.totals.cacheReadTokens += nonNegInt(num(usage, 'cacheRead'));
      this.totals.cacheWriteTokens += nonNegInt(num(usage, 'cacheWrite'));
      const cost = obj(usage, 'cost');
      this.totals.costUsd += Math.max(0, (cost && num(cost, 'total')) ?? 0);
    }
    const content = translateContent(arr(message, 'content') ?? []);
    return content.length > 0 ? [{ type: 'message.assistant', content }] : [];
  }

  private toolResult(msg: Obj): AgentEvent[] {
    const result = obj(msg, 'result');
    const text = (arr(result ?? {}, 'content') ?? [])
      .map((b) =>
        isObj(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : isObj(b) ? `[${String(b.type)}]` : '',
      )
      .join('\n');
    return [
      {
        type: 'tool.result',
        toolId: str(msg, 'toolCallId') ?? '',
        isError: msg.isError === true,
        output: capOutput(text),
      },
    ];
  }

  private agentEnd(): AgentEvent[] {
    const last = this.lastAssistant;
    if (last?.stopReason === 'error' && last.errorMessage && PI_RETRYABLE.test(last.errorMessage)) {
      // pi decides next: auto_retry_start or auto_retry_end{success:false}.
      return [];
    }
    this.retrying = false;
    return this.closeTurn(last);
  }

  private retryEnd(msg: Obj): AgentEvent[] {
    const wasRetrying = this.retrying;
    this.retrying = false;
    if (msg.success === true) return [];
    const finalError = str(msg, 'finalError') ?? this.lastAssistant?.errorMessage ?? 'provider error';
    return this.closeTurn({ stopReason: 'error', errorMessage: finalError }, wasRetrying);
  }

  private closeTurn(
    last: { stopReason: string; errorMessage?: string } | undefined,
    retriesExhausted = false,
  ): AgentEvent[] {
    const stopReason = STOP_REASONS[last?.stopReason ?? 'stop'] ?? 'unknown';
    const t = this.totals;
    const common = {
      usage: {
        inputTokens: t.inputTokens,
        outputTokens: t.outputTokens,
        cacheReadTokens: t.cacheReadTokens,
        cacheWriteTokens: t.cacheWriteTokens,
      },
      costUsd: t.costUsd,
      durationMs: Date.now() - t.startedAt,
    };
    if (stopReason === 'error') {
      return this.turn.close({
        stopReason,
        ...common,
        error: providerError(last?.errorMessage ?? 'unknown error', retriesExhausted),
      });
    }
    return this.turn.close({ stopReason, ...common });
  }
}

function providerError(message: string, retriesExhausted: boolean): ErrorInfo {
  return (
    classifyProviderError(parseProviderErrorText(message)) ?? {
      code: 'provider_error',
      message: head(message),
      retryable: retriesExhausted || PI_RETRYABLE.test(message),
    }
  );
}

function toolCallIn(message: Obj | undefined, index: number): { id: string; name: string } | undefined {
  const block = message ? arr(message, 'content')?.[index] : undefined;
  if (!isObj(block) || block.type !== 'toolCall') return undefined;
  const id = str(block, 'id');
  const name = str(block, 'name');
  return id && name ? { id, name } : undefined;
}

function translateContent(content: unknown[]): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  for (const b of content) {
    if (!isObj(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') blocks.push({ type: 'text', text: b.text });
    else if (b.type === 'thinking' && typeof b.thinking === 'string')
      blocks.push({ type: 'thinking', text: b.thinking });
    else if (b.type === 'toolCall') {
      blocks.push({
        type: 'tool_use',
        id: str(b, 'id') ?? '',
        name: str(b, 'name') ?? '',
        input: obj(b, 'arguments') ?? {},
      });
    }
  }
  return blocks;
}

function optionalNum<K extends string>(key: K, v: number | undefined): Partial<Record<K, number>> {
  return v !== undefined && v >= 0 ? ({ [key]: v } as Record<K, number>) : {};
}

function emptyTotals(): TurnTotals {
  return {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: 0,
    startedAt: Date.now(),
  };
}
