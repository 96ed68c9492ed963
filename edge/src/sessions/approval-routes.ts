import { createRoute, z } from '@hono/zod-openapi';
import type { OpenAPIHono } from '@hono/zod-openapi';
import {
  ApprovalAnswerSchema,
  ApprovalDecisionSchema,
  ApprovalIdSchema,
  ApprovalReasonSchema,
} from '@switchyard/protocol';
import { auditInsert } from '../audit/store.ts';
import type { AppDeps } from '../context.ts';
import { apiError, errorBody, ErrorBodySchema, errorResponses } from '../errors.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';
import { hubFor, type SessionsEnv } from './access.ts';
import { SessionIdParamSchema } from './schemas.ts';

// POST /api/sessions/:id/approvals/:approvalId (DESIGN "Tool approvals"): the session's owner
// answers a pending tool approval. The hub decides who was first; the answer is audited.

export const ApprovalResolutionSchema = z
  .object({
    approvalId: z.string(),
    decision: ApprovalDecisionSchema,
    reason: ApprovalReasonSchema,
    by: z.string().optional(),
    message: z.string().optional().openapi({ description: 'what the model reads for a deny' }),
  })
  .openapi('ApprovalResolution');

const ApprovalConflictSchema = ErrorBodySchema.extend({
  approval: ApprovalResolutionSchema.openapi({ description: 'the first decision, which stands' }),
}).openapi('ApprovalConflict');

const ParamsSchema = SessionIdParamSchema.extend({
  approvalId: ApprovalIdSchema.openapi({ param: { name: 'approvalId', in: 'path' } }),
});

const answerRoute = createRoute({
  method: 'post',
  path: '/{id}/approvals/{approvalId}',
  tags: ['sessions'],
  summary: "Allow or deny a pending tool call (owner); a deny's message reaches the model as the tool's error",
  security: AUTHENTICATED,
  request: {
    params: ParamsSchema,
    body: { required: true, content: jsonContent(ApprovalAnswerSchema.openapi('ApprovalAnswer')) },
  },
  responses: {
    200: { description: 'resolved by this answer', content: jsonContent(ApprovalResolutionSchema) },
    409: {
      description: 'already resolved; `approval` is the first decision',
      content: jsonContent(ApprovalConflictSchema),
    },
    ...errorResponses(400, 401, 403, 404, 415),
  },
});

/** Registers the route on the sessions router (which already checked the caller owns the session). */
export function approvalRoutes(app: OpenAPIHono<SessionsEnv>, deps: AppDeps): void {
  app.openapi(answerRoute, async (c) => {
    const row = c.get('session');
    const { approvalId } = c.req.valid('param');
    const body = c.req.valid('json');
    const { user } = c.get('auth');
    const result = await hubFor(c.env, row.id).answerApproval({
      approvalId,
      decision: body.decision,
      ...(body.message !== undefined && { message: body.message }),
      by: user.username,
    });
    if (!result.ok) {
      if ('resolution' in result)
        return c.json({ ...errorBody('conflict', result.message), approval: result.resolution }, 409);
      return apiError(c, 404, 'not_found', result.status === 404 ? 'no such approval' : result.message);
    }
    await auditInsert(
      c.env.DB,
      {
        at: deps.clock(),
        actor: user,
        action: 'approval.decide',
        target: `session:${row.id}`,
        before: null,
        after: {
          approvalId,
          decision: body.decision,
          reason: 'user',
          ...(body.message !== undefined && { message: body.message }),
        },
      },
      { onlyIfPreviousChanged: false },
    ).statement.run();
    return c.json(result.value, 200);
  });
}
