import {
  AgentEventSchema,
  HubToRunnerSchema,
  RunnerToHubSchema,
  WIRE_PROTOCOL_VERSION,
  type AgentEvent,
  type HubToRunner,
  type RunnerToHub,
} from '@switchyard/protocol';
import { PoolClaimSchema, type PoolClaim } from '@switchyard/protocol/pool';

// A pooled runner, once it waits in the pool, parses one of each frame it checks first after its
// claim (docs/DESIGN.md "Warm runner pool" → "Parsers rehearsed in the pool"). zod sets a schema up
// at its first parse (1–3 ms each under the runner's --no-opt, against a tenth of a millisecond
// or less after), and on a pooled runner those first parses fall on the session's first
// message: the claim that carries it, the CLI's first event, the hub link's hello and welcome
// that the first events wait for, the reply to the hub's copy of the message.

interface Rehearsal {
  name: string;
  schema: { safeParse(value: unknown): { success: boolean } };
  sample: unknown;
}

/** What is rehearsed: each sample is a valid frame, so the path a real one takes is the one set up. */
export const REHEARSALS: readonly Rehearsal[] = [
  {
    name: 'claim',
    schema: PoolClaimSchema,
    sample: {
      type: 'claim',
      sessionId: 'rehearsal',
      hubUrl: 'ws://127.0.0.1/rehearsal',
      runnerToken: 'rehearsal',
      first: { messageId: 'rehearsal', message: { text: 'rehearsal' } },
    } satisfies PoolClaim,
  },
  {
    name: 'agent event',
    schema: AgentEventSchema,
    sample: { type: 'text.delta', index: 0, text: 'rehearsal' } satisfies AgentEvent,
  },
  {
    name: 'hello',
    schema: RunnerToHubSchema,
    sample: {
      type: 'hello',
      protocol: WIRE_PROTOCOL_VERSION,
      runnerId: 'rehearsal',
      sessionId: 'rehearsal',
      backend: 'claude',
      cliVersion: 'rehearsal',
      capabilities: { guard: 'loaded', sandbox: 'none' },
      lastSeq: 0,
      cli: 'running',
    } satisfies RunnerToHub,
  },
  {
    name: 'reply',
    schema: RunnerToHubSchema,
    sample: { type: 'accepted', inReplyTo: 'rehearsal', duplicate: true } satisfies RunnerToHub,
  },
  {
    name: 'welcome',
    schema: HubToRunnerSchema,
    sample: { type: 'welcome', ackedSeq: 0, runnerToken: 'rehearsal', workspaceGeneration: 0 } satisfies HubToRunner,
  },
];

/** Parses every sample once; returns the names of those that did not parse (a runner bug, logged). */
export function rehearseParsers(rehearsals: readonly Rehearsal[] = REHEARSALS): string[] {
  return rehearsals.filter((r) => !r.schema.safeParse(r.sample).success).map((r) => r.name);
}
