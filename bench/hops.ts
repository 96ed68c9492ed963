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
 * A turn's first delta split into its hops, without the model's own stamps: wall-clock ms from
 * the `POST` to the client's receipt. A stamp that is missing makes its hops NaN.
 */
export function firstDeltaHops(
  postedAt: number,
  way: MessageHops | undefined,
  hops: DeliveryHops | undefined,
  receivedAt: number,
): Array<[string, number]> {
  const n = (x: number | undefined) => x ?? Number.NaN;
  return [
    ['POST → hub (proxy, Worker, RPC)', n(way?.hubIn) - postedAt],
    ['hub → runner has the message', n(hops?.userMessage) - n(way?.hubIn)],
    ['runner → CLI stdin', n(hops?.stdin) - n(hops?.userMessage)],
    ['CLI stdin → its first delta read (CLI, model)', n(hops?.read) - n(hops?.stdin)],
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
