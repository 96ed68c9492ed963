import { z } from '@hono/zod-openapi';
import type { Backend } from '@switchyard/protocol';

/** What a probe reports about one backend in the runner image. */
const ProbeResultSchema = z.object({
  available: z.boolean(),
  version: z.string().max(200).optional(),
  reason: z.string().max(2000).optional().openapi({ description: 'why it is not usable' }),
  fix: z.string().max(2000).optional().openapi({ description: 'how an operator makes it usable' }),
});
export type ProbeResult = z.infer<typeof ProbeResultSchema>;

/**
 * Answers "can new sessions use this backend?": CLI present, its version, the sandbox guard
 * loads, its config is valid. The launchers answer it by running the runner's `probe` mode.
 */
export interface BackendProbe {
  probe(backend: Backend): Promise<ProbeResult>;
}

/** The default until the hub wires a real probe: nothing can be verified, and it says so. */
export const unwiredProbe: BackendProbe = {
  async probe(backend) {
    return {
      available: false,
      reason: `no runner probe is wired into this edge yet, so ${backend} cannot be verified`,
      fix: 'deploy an edge build that includes the session hub (it wires the runner probe); claude can be selected without a probe',
    };
  },
};

/**
 * Calls a probe defensively: a probe that throws, hangs past `timeoutMs`, or returns something
 * malformed is an unusable backend with a reason, never a 5xx.
 */
export async function runProbe(probe: BackendProbe, backend: Backend, timeoutMs: number): Promise<ProbeResult> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<ProbeResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          available: false,
          reason: `the ${backend} probe did not answer within ${timeoutMs} ms`,
          fix: 'check that the runner can start; then retry',
        }),
      timeoutMs,
    );
  });
  try {
    const raw: unknown = await Promise.race([probe.probe(backend), timeout]);
    const parsed = ProbeResultSchema.safeParse(raw);
    if (!parsed.success) {
      return {
        available: false,
        reason: `the ${backend} probe returned a malformed report`,
        fix: 'check the runner version matches the edge',
      };
    }
    return parsed.data;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return {
      available: false,
      reason: `the ${backend} probe failed: ${message.slice(0, 500)}`,
      fix: 'check that the runner can start; then retry',
    };
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}
