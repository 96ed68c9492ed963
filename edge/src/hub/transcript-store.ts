import { TranscriptSchema, type Backend, type Transcript } from '@switchyard/protocol';

// The latest CLI transcript of each session, in R2 `TRANSCRIPTS` (overwritten on every upload).
// A runner the hub has never seen gets it in its welcome, so a new runner resumes the conversation.

export function transcriptKey(sessionId: string): string {
  return `sessions/${sessionId}/transcript.json`;
}

/** The stored transcript, if it is readable and of `backend`; any problem is logged and means none. */
export async function readTranscript(
  bucket: R2Bucket,
  sessionId: string,
  backend: Backend,
): Promise<Transcript | undefined> {
  try {
    const obj = await bucket.get(transcriptKey(sessionId));
    if (obj === null) return undefined;
    const parsed = TranscriptSchema.safeParse(await obj.json());
    if (parsed.success && parsed.data.backend === backend) return parsed.data;
    console.error('session hub: stored transcript is unreadable; the next runner starts without it');
  } catch (err) {
    console.error('session hub: transcript read failed:', err instanceof Error ? err.message : String(err));
  }
  return undefined;
}

/** Stores `transcript` as the session's latest; returns its key. */
export async function putTranscript(
  bucket: R2Bucket,
  sessionId: string,
  transcript: Transcript,
  from: { runnerId: string; seq: number },
): Promise<string> {
  const key = transcriptKey(sessionId);
  await bucket.put(key, JSON.stringify(transcript), {
    httpMetadata: { contentType: 'application/json' },
    customMetadata: { sha256: transcript.sha256, runnerId: from.runnerId, seq: String(from.seq) },
  });
  return key;
}

export async function deleteTranscript(bucket: R2Bucket, sessionId: string): Promise<void> {
  await bucket.delete(transcriptKey(sessionId));
}
