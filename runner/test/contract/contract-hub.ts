import type { AgentEvent, ErrorInfo, RunnerHops, RunnerStatus, RunnerToHub, Transcript } from '@switchyard/protocol';

// The hub as the runner contract suite sees it. The suite starts real runner
// processes pointed at `session.runnerEnv` and drives them only through this
// interface; test-hub.ts implements it in-process, with the fault injection
// (cut links, withheld acks) the runner's rules are tested against. The real
// SessionHub's side of the link is tested in edge/test/hub-runner.test.ts and,
// with real runners, in test/e2e (DESIGN "Runner link").

export type Reply = { accepted: true; duplicate?: boolean } | { accepted: false; error: ErrorInfo };

/** One event in the hub's durable log for a session, in log order. */
export interface HubEvent {
  runnerId: string;
  seq: number;
  messageId?: string;
  event: AgentEvent;
  /** The runner's hop stamps, when it runs with SWITCHYARD_BENCH_HOPS=1. */
  hops?: RunnerHops;
}

export type Hello = Extract<RunnerToHub, { type: 'hello' }>;
export type Bye = Extract<RunnerToHub, { type: 'bye' }>;

export interface ContractSession {
  readonly sessionId: string;
  /** Environment that makes `switchyard-runner serve` serve this session on this hub. */
  readonly runnerEnv: Record<string, string>;
  /** Sends a user message and waits for the runner's answer (accepted or a typed reject). */
  sendMessage(text: string, opts?: { messageId?: string }): Promise<{ messageId: string; reply: Reply }>;
  interrupt(): Promise<Reply>;
  /** Asks the runner to stop now. */
  shutdown(reason?: string): Promise<void>;
  /** The durable log: every event exactly once, in order. */
  events(): HubEvent[];
  /** Transcripts stored for the session, oldest first, with the log position they arrived at. */
  transcripts(): Array<{ runnerId: string; seq: number; afterEvents: number; transcript: Transcript }>;
  statuses(): RunnerStatus[];
  hellos(): Hello[];
  byes(): Bye[];
  /** Protocol violations the hub saw from the runner (duplicates, gaps, invalid frames). */
  violations(): string[];
  /** Resolves when `probe` returns a value other than undefined/false, re-checked on every change. */
  waitFor<T>(probe: () => T | undefined | false, what: string, timeoutMs?: number): Promise<T>;
}

export interface HubFaults {
  /** Drops the runner's socket abruptly; `dropUnacked` also forgets frames received but not yet acked. */
  cutLink(sessionId: string, opts?: { dropUnacked?: boolean }): void;
  /** Stop (or resume) acking sequenced frames. */
  pauseAcks(sessionId: string, paused: boolean): void;
  /** Ack only every n-th sequenced frame message. */
  setAckEvery(sessionId: string, n: number): void;
}

export interface ContractHub {
  readonly name: string;
  newSession(): Promise<ContractSession>;
  readonly faults: HubFaults;
  close(): Promise<void>;
}
