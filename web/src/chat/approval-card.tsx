// A tool call waiting for a person (DESIGN "Tool approvals"): every viewer sees the card with
// the tool, its input and the time left; the session's owner can Allow or Deny (with an
// optional message the model reads). When the hub logs the decision, every open page turns
// the card into it, with who made it.
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { api, call, describeError } from '../api/client.ts';
import type { ApprovalBlock } from './conversation.ts';
import './approval-card.css';

/** Which session the cards belong to and whether this viewer may answer (the owner). */
export const ApprovalContext = createContext<{ sessionId: string; canAnswer: boolean } | null>(null);

const REASONS: Record<string, string> = {
  user: '',
  policy: 'by the session policy',
  expired: 'nobody answered in time',
  interrupted: 'the turn was interrupted',
  runner_lost: 'the runner was lost',
};

function useSecondsLeft(expiresAt: string, running: boolean): number {
  const deadline = Date.parse(expiresAt);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [running]);
  return Math.max(0, Math.ceil((deadline - now) / 1000));
}

function formatLeft(s: number): string {
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s left` : `${s} s left`;
}

export function ApprovalCard({ block }: { block: ApprovalBlock }) {
  const ctx = useContext(ApprovalContext);
  const { request, resolution } = block;
  const pending = resolution === undefined;
  const left = useSecondsLeft(request.expiresAt, pending);
  const [message, setMessage] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function answer(decision: 'allow' | 'deny') {
    if (ctx === null) return;
    setSending(true);
    setError(null);
    try {
      await call(
        api.POST('/api/sessions/{id}/approvals/{approvalId}', {
          params: { path: { id: ctx.sessionId, approvalId: request.approvalId } },
          body: decision === 'deny' && message.trim() !== '' ? { decision, message: message.trim() } : { decision },
        }),
      );
      // The card changes when approval.resolved arrives on the stream, like on every other page.
    } catch (e) {
      setError(describeError(e));
    } finally {
      setSending(false);
    }
  }

  const verdict =
    resolution === undefined
      ? null
      : `${resolution.decision === 'allow' ? 'Allowed' : 'Denied'}${resolution.by ? ` by ${resolution.by}` : ''}${
          REASONS[resolution.reason] ? ` — ${REASONS[resolution.reason]}` : ''
        }`;
  return (
    <section
      class={`approval-card approval-${pending ? 'pending' : resolution.decision}`}
      aria-label={`Approval ${request.name}: ${pending ? 'waiting' : resolution.decision}`}
      data-approval-id={request.approvalId}
    >
      <div class="approval-head">
        <span class="tool-name">{request.name}</span>
        <span class="approval-kind">{request.kind}</span>
        {pending ? (
          <span class="approval-left" role="timer">
            {formatLeft(left)}
          </span>
        ) : (
          <span class="approval-verdict" role="status">
            {verdict}
          </span>
        )}
      </div>
      <pre class="tool-io">{JSON.stringify(request.input, null, 2)}</pre>
      {!pending && resolution.decision === 'deny' && resolution.message !== undefined && (
        <p class="muted approval-message">{resolution.message}</p>
      )}
      {pending && ctx?.canAnswer === true && (
        <div class="approval-actions">
          <input
            type="text"
            aria-label="Reason for denying (optional)"
            placeholder="Reason for denying (optional)"
            maxLength={2000}
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
          />
          <button type="button" class="btn primary small" disabled={sending} onClick={() => void answer('allow')}>
            Allow
          </button>
          <button type="button" class="btn danger small" disabled={sending} onClick={() => void answer('deny')}>
            Deny
          </button>
        </div>
      )}
      {pending && ctx?.canAnswer !== true && <p class="muted">Waiting for the session's owner to decide.</p>}
      {error !== null && (
        <p class="notice error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
