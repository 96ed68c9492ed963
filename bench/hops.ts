// Reading hop stamps (protocol's bench-hops.ts; docs/DESIGN.md "Hop stamps") in the benches that
// start the stack with them on: the runner with SWITCHYARD_BENCH_HOPS=1, the hub with BENCH_HOPS=1.
import {
  MESSAGE_HOPS_HEADER,
  MessageHopsSchema,
  SSE_HOPS_COMMENT,
  type DeliveryHops,
  type MessageHops,
} from '@switchyard/protocol';
import { median } from './stats.ts';

/** The stack's environment that turns the stamps on, for `startStack`. */
export const HOPS_ON = { runnerEnv: { SWITCHYARD_BENCH_HOPS: '1' }, edgeVars: { BENCH_HOPS: '1' } } as const;

/** The hop stamps the Worker wrote as `: hops <id> {…}` comments, by event id. */
export function hopComments(comments: readonly string[]): Map<string, DeliveryHops> {
  const out = new Map<string, DeliveryHops>();
  for (const c of comments) {
    if (!c.startsWith(SSE_HOPS_COMMENT)) continue;
    const rest = c.slice(SSE_HOPS_COMMENT.length);
    const sp = rest.indexOf(' ');
    out.set(rest.slice(0, sp), JSON.parse(rest.slice(sp + 1)) as DeliveryHops);
  }
  return out;
}

/** A message's way in, from its 202 (undefined when the hub stamped nothing). */
export const messageHops = (headers: Headers): MessageHops | undefined =>
  MessageHopsSchema.safeParse(JSON.parse(headers.get(MESSAGE_HOPS_HEADER) ?? 'null')).data;

/**
 * The stamp proxy's times in a streamed delta (bench/e2e/stamp-proxy.ts): `sent`, when the delta
 * left the model; `request`, when the request it answers had arrived (wall-clock ms).
 */
export function proxyStamps(text: unknown): { sent: number; request: number } {
  const m = /⟨T([\d.]+)R([\d.]+)⟩/.exec(String(text));
  if (!m) throw new Error(`delta without a stamp: ${JSON.stringify(text)}`);
  return { sent: Number(m[1]), request: Number(m[2]) };
}

/**
 * A turn's first delta split into its hops: wall-clock ms from the `POST` to the client's receipt,
 * the CLI's part split at the model's stamps (`proxyStamps`). A stamp that is missing makes its
 * hops NaN.
 */
export function firstDeltaHops(
  postedAt: number,
  way: MessageHops | undefined,
  hops: DeliveryHops | undefined,
  model: { request: number; sent: number },
  receivedAt: number,
): Array<[string, number]> {
  const n = (x: number | undefined) => x ?? Number.NaN;
  return [
    ['POST → hub (proxy, Worker, RPC)', n(way?.hubIn) - postedAt],
    ['hub → runner has the message', n(hops?.userMessage) - n(way?.hubIn)],
    ['runner → CLI stdin', n(hops?.stdin) - n(hops?.userMessage)],
    ['CLI stdin → the model has the request', model.request - n(hops?.stdin)],
    ['the model: request → first delta out', model.sent - model.request],
    ['model → the runner reads it', n(hops?.read) - model.sent],
    ['runner: codec, buffer → link send', n(hops?.sent) - n(hops?.read)],
    ['link → hub', n(hops?.hubIn) - n(hops?.sent)],
    ['hub → Worker SSE write', n(hops?.sse) - n(hops?.hubIn)],
    ['Worker → SSE client', receivedAt - n(hops?.sse)],
  ];
}

/** Whole waits and their named parts, over several runs; medians per part. */
export class PartTimes {
  readonly total: number[] = [];
  readonly parts = new Map<string, number[]>();
  add(total: number, parts: Array<[string, number]>): void {
    this.total.push(total);
    for (const [name, ms] of parts) this.parts.set(name, [...(this.parts.get(name) ?? []), ms]);
  }
  medians(): Array<[string, number]> {
    return [...this.parts].map(([name, xs]) => [name, median(xs)]);
  }
}
