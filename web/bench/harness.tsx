// Render bench harness (bench/web/run.ts drives it in Chromium). The chat's real path — SSE
// bytes → SessionStream → per-frame fold → ConversationLog — fed by a scripted stream instead of
// the network. `raw` mode is the baseline measured in the same page: the same bytes appended
// as text to one <pre>, no framework, no Markdown. Latency = time from a delta's bytes being
// handed to the stream to the end of the frame that painted it.
import type { AgentEvent } from '@switchyard/protocol';
import { render } from 'preact';
import { useLayoutEffect } from 'preact/hooks';
import { ConversationLog } from '../src/chat/conversation-log.tsx';
import { useConversation } from '../src/chat/use-conversation.ts';
import { SessionStream } from '../src/stream/session-stream.ts';
import '../src/styles.css';

const encoder = new TextEncoder();
let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
const scriptedFetch: typeof fetch = async () =>
  new Response(new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) }), {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
  });

let seq = 0;
const nextId = () => `01J${String(++seq).padStart(23, '0')}`;
/** Enqueue time of each event id not yet seen painted. */
const sentAt = new Map<string, number>();
let latencies: number[] = [];

function afterPaint(lastId: string | null): void {
  if (lastId === null) return;
  requestAnimationFrame(() =>
    setTimeout(() => {
      const now = performance.now();
      for (const [id, t] of sentAt) {
        if (id > lastId) continue;
        latencies.push(now - t);
        sentAt.delete(id);
      }
    }, 0),
  );
}

function frame(ev: AgentEvent & { messageId?: string }): { id: string; text: string } {
  const id = nextId();
  return { id, text: `id: ${id}\nevent: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n` };
}

function push(events: Array<AgentEvent & { messageId?: string }>): void {
  const now = performance.now();
  let text = '';
  for (const e of events) {
    const f = frame(e);
    sentAt.set(f.id, now);
    text += f.text;
  }
  controller?.enqueue(encoder.encode(text));
}

function Chat() {
  const { conv } = useConversation('BENCH', { fetch: scriptedFetch });
  useLayoutEffect(() => afterPaint(conv.lastEventId), [conv]);
  return <ConversationLog conv={conv} pending={[]} />;
}

function mountRaw(): void {
  const pre = document.createElement('pre');
  document.getElementById('app')!.append(pre);
  const stream = new SessionStream({
    sessionId: 'BENCH',
    fetch: scriptedFetch,
    onStatus: () => undefined,
    onEvents: (events) => {
      for (const e of events) if (e.type === 'text.delta') pre.append(e.text);
      afterPaint(events.at(-1)!.id);
    },
  });
  stream.start();
}

const until = (f: () => boolean) =>
  new Promise<void>((resolve) => {
    const check = () => (f() ? resolve() : setTimeout(check, 5));
    check();
  });

const nextFrame = () => new Promise<number>((r) => requestAnimationFrame(r));

const WORDS = 'the quick brown fox jumps over the lazy dog and `code` then **bold** text'.split(' ');

async function streamAnswer(perFrame: number, frames: number): Promise<number[]> {
  latencies = [];
  push([{ type: 'message.user', messageId: 'M1', text: 'go' }]);
  await until(() => sentAt.size === 0);
  latencies = [];
  let w = 0;
  for (let f = 0; f < frames; f++) {
    await nextFrame();
    const batch: Array<AgentEvent & { messageId: string }> = [];
    for (let i = 0; i < perFrame; i++)
      batch.push({ type: 'text.delta', index: 0, text: `${WORDS[w++ % WORDS.length]} `, messageId: 'M1' });
    if (f % 25 === 24)
      batch.push({ type: 'text.delta', index: 0, text: '\n\n```ts\nconst x = 1;\n```\n\n', messageId: 'M1' });
    push(batch);
  }
  await until(() => sentAt.size === 0);
  return latencies;
}

/** 500 finished turns replayed at once (a reload of a long session): ms until painted. */
async function history(turns: number): Promise<number> {
  latencies = [];
  const events: Array<AgentEvent & { messageId?: string }> = [];
  for (let t = 0; t < turns; t++) {
    const m = `M${t}`;
    events.push({ type: 'message.user', messageId: m, text: `Question ${t}: what does this do?` });
    for (const piece of [
      `Answer ${t}: it `,
      'reads the file and ',
      'prints **each** line:\n\n```ts\nfor (const l of lines) console.log(l);\n```\n',
    ]) {
      events.push({ type: 'text.delta', index: 0, text: piece, messageId: m });
    }
    events.push({ type: 'tool.start', index: 1, toolId: `t${t}`, name: 'Bash', messageId: m });
    events.push({
      type: 'tool.end',
      index: 1,
      toolId: `t${t}`,
      name: 'Bash',
      input: { command: `cat file${t}.txt` },
      messageId: m,
    });
    events.push({ type: 'message.assistant', content: [], messageId: m });
    events.push({ type: 'tool.result', toolId: `t${t}`, isError: false, output: `line 1\nline 2\n`, messageId: m });
    events.push({
      type: 'turn.done',
      stopReason: 'end_turn',
      usage: { inputTokens: 100, outputTokens: 20 },
      messageId: m,
    });
  }
  push(events);
  await until(() => sentAt.size === 0);
  return Math.max(...latencies);
}

const mode = new URLSearchParams(location.search).get('mode');
if (mode === 'raw') mountRaw();
else render(<Chat />, document.getElementById('app')!);

Object.assign(window, { bench: { streamAnswer, history } });
