import { z } from 'zod';

// Bench only (bench/e2e, docs/DESIGN.md "Hop stamps"): where a streamed event's time goes
// between the CLI and an SSE client. Off unless the runner runs with SWITCHYARD_BENCH_HOPS=1 and
// the hub with BENCH_HOPS=1; off, no frame carries any of this and the wire is unchanged. Every
// stamp is wall-clock milliseconds (performance.timeOrigin + performance.now() in Node, Date.now()
// in workerd), comparable across processes only because the bench runs them on one machine.

/**
 * What the runner stamps on one sequenced event: stdout chunk read, codec done, pushed to the
 * buffer; and, on the events of a turn, when its user_message arrived over the link and when it
 * was written to the CLI's stdin (the way in, for the first delta's breakdown).
 */
export const RunnerHopsSchema = z.object({
  read: z.number(),
  codec: z.number(),
  buffer: z.number(),
  userMessage: z.number().optional(),
  stdin: z.number().optional(),
});
export type RunnerHops = z.infer<typeof RunnerHopsSchema>;

/**
 * Everything known about one event when the Worker writes it to the SSE stream: the runner's
 * stamps, when the runner sent its `events` frame, the hub's (received, log written, broadcast)
 * and the Worker's SSE write. workerd's clock only moves across I/O, so the hub's three are one
 * value: the durable write and the broadcast cost shows up in the next hop (the hub's output gate
 * holds the broadcast until the write is durable).
 */
export interface DeliveryHops extends RunnerHops {
  sent: number;
  hubIn: number;
  hubStored: number;
  hubSent: number;
  sse: number;
}

/** The SSE comment line the Worker writes before an event that carries hops: `: hops <event id> {…DeliveryHops}`. */
export const SSE_HOPS_COMMENT = 'hops ';

/**
 * A message's way in (bench only, the hub with BENCH_HOPS=1): when the sessions router began the
 * `POST /api/sessions/:id/messages`, when the Worker called the hub, and when the hub began taking
 * it, in the 202's MESSAGE_HOPS_HEADER as JSON. With the runner's `userMessage` stamp they split
 * the wait before the CLI has the message into its hops. workerd's clock moves only across I/O, so
 * `workerCall` is when the Worker's last read (D1, the body) came back.
 */
export const MessageHopsSchema = z.object({ workerIn: z.number(), workerCall: z.number(), hubIn: z.number() });
export type MessageHops = z.infer<typeof MessageHopsSchema>;

export const MESSAGE_HOPS_HEADER = 'x-switchyard-hops';
