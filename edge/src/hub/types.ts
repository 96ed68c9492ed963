import type {
  ApprovalMode,
  Backend,
  ContentBlock,
  Image,
  Repository,
  SessionState,
  StopReason,
} from '@switchyard/protocol';
import type { ApprovalConfig } from './approvals.ts';
import type { RunnerCaps } from '../runner-link/slots.ts';

// What crosses the Worker → SessionHub RPC boundary (structured-clonable plain objects).

export interface HubSessionInfo {
  id: string;
  userId: string;
  backend: Backend;
  title: string | null;
  createdAt: number;
  /** Absent in sessions created before approvals existed: `auto`. */
  approvals?: ApprovalMode;
  /** The git repository the workspace starts from (cloned by the first runner); absent: none. */
  repository?: Repository;
}

export interface HubLimits {
  idleMs: number;
  /**
   * The idle limit of a runner that has answered no message yet (started ahead); the lower of
   * this and `idleMs` applies. Absent in sessions stored before it existed: `idleMs`.
   */
  unusedIdleMs?: number;
  maxLifetimeMs: number;
}

/** What a runner launched for this session is started with: the settings current now. */
export interface LaunchInput {
  /** Where a runner launched now dials (see DESIGN "Session hub decisions"). */
  hubUrl: string;
  limits: HubLimits;
  model: string | null;
  /** Checked when a runner has to be started. */
  runnerCaps: RunnerCaps;
  /** Settings `approvalPolicy` / `approvalTimeoutSeconds` now; applied to this turn's requests. */
  approvals?: ApprovalConfig;
}

export interface PostMessageInput extends LaunchInput {
  text: string;
  images?: Image[];
  clientMessageId?: string;
}

export interface AnswerApprovalInput {
  approvalId: string;
  decision: 'allow' | 'deny';
  message?: string;
  /** The username shown as `by`. */
  by: string;
}

type HubErrorCode = 'not_found' | 'conflict' | 'invalid_request' | 'runner_limit' | 'session_log_full' | 'internal';

export type HubResult<T> =
  | { ok: true; value: T }
  | { ok: false; status: 400 | 404 | 409 | 429 | 500; code: HubErrorCode; message: string; field?: string };

export type HubRefusal = Extract<HubResult<never>, { ok: false }>;

export interface PostMessageResult {
  messageId: string;
  /** This clientMessageId was seen before: nothing new was started. */
  duplicate: boolean;
  /** Bench only (BENCH_HOPS=1; protocol's bench-hops.ts): when the hub began taking the message. */
  hubIn?: number;
}

export interface StartRunnerResult {
  /** False: nothing new was started (a runner was running or on its way, or the session cannot start). */
  started: boolean;
}

export interface HubSnapshot {
  state: SessionState;
  stateReason: string | null;
  /** The message whose turn is running (or waiting for its runner); null when none. */
  turn: { messageId: string } | null;
  runner: {
    launchId: string;
    ref: string | null;
    runnerId: string | null;
    connected: boolean;
    startedAt: number;
  } | null;
  lastEventId: string | null;
}

export type TranscriptEntry =
  | { role: 'user'; eventId: string; messageId: string; text: string }
  | { role: 'assistant'; eventId: string; messageId: string | null; content: ContentBlock[] }
  | { role: 'tool'; eventId: string; messageId: string | null; toolId: string; isError: boolean; output: string }
  | {
      role: 'turn';
      eventId: string;
      messageId: string | null;
      stopReason: StopReason;
      error?: { code: string; message: string };
    };
