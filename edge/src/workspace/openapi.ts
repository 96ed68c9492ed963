import { z } from '@hono/zod-openapi';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { errorResponses } from '../errors.ts';
import { AUTHENTICATED, jsonContent } from '../openapi.ts';

// The Files API in the OpenAPI document. The routes themselves are plain Hono handlers
// (file-routes.ts): `{path}` spans several segments, which OpenAPI path templates cannot express
// as a route matcher, so they are documented here by hand from these schemas.

const security = AUTHENTICATED;
const tags = ['workspace'];

const SessionId = z.string().openapi({ param: { name: 'id', in: 'path' }, description: 'session id' });
const FilePath = z.string().openapi({
  param: { name: 'path', in: 'path' },
  description:
    'workspace path, relative, `/`-separated (each segment percent-encoded); no `.`/`..` segments, no control characters, at most 1024 bytes and 32 segments',
  example: 'src/main.ts',
});

export const WorkspaceFileSchema = z
  .object({ path: z.string(), size: z.number().int(), modifiedAt: z.string().openapi({ format: 'date-time' }) })
  .openapi('WorkspaceFile');
export const WorkspaceListSchema = z
  .object({ files: z.array(WorkspaceFileSchema), totalBytes: z.number().int() })
  .openapi('WorkspaceList');
export const WorkspacePutSchema = z
  .object({ path: z.string(), size: z.number().int(), sha256: z.string() })
  .openapi('WorkspacePut');

const bytes = { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } };

// Takes the registry, not the router: documentation does not depend on the router's env type.
export function documentWorkspaceRoutes(r: OpenAPIHono['openAPIRegistry']): void {
  r.registerPath({
    method: 'get',
    path: '/{id}/files',
    tags,
    security,
    summary: 'The durable workspace: every file with its size (owner or admin; works with no runner live)',
    request: { params: z.object({ id: SessionId }) },
    responses: {
      200: { description: 'files', content: jsonContent(WorkspaceListSchema) },
      ...errorResponses(401, 404),
    },
  });
  r.registerPath({
    method: 'put',
    path: '/{id}/files/{path}',
    tags,
    security,
    summary:
      'Create or replace a file (owner); the body is the raw content. A live runner gets it before the agent’s next tool call',
    request: { params: z.object({ id: SessionId, path: FilePath }), body: { content: bytes } },
    responses: {
      201: { description: 'stored', content: jsonContent(WorkspacePutSchema) },
      ...errorResponses(400, 401, 403, 404, 409, 413),
    },
  });
  r.registerPath({
    method: 'get',
    path: '/{id}/files/{path}',
    tags,
    security,
    summary: 'A file’s bytes, as an attachment (owner or admin)',
    request: { params: z.object({ id: SessionId, path: FilePath }) },
    responses: { 200: { description: 'the content', content: bytes }, ...errorResponses(400, 401, 404) },
  });
  r.registerPath({
    method: 'delete',
    path: '/{id}/files/{path}',
    tags,
    security,
    summary: 'Delete a file (owner)',
    request: { params: z.object({ id: SessionId, path: FilePath }) },
    responses: { 204: { description: 'deleted' }, ...errorResponses(400, 401, 403, 404) },
  });
  r.registerPath({
    method: 'get',
    path: '/{id}/diff',
    tags,
    security,
    summary:
      'What changed in the workspace since its baseline (the repository clone; none: every file is added), as `git diff` text that `git apply` takes (owner or admin). Binary files and files over 1 MiB are one `Binary files ... differ` line; the text stops at 4 MiB with a `# Diff truncated` line',
    request: {
      params: z.object({ id: SessionId }),
      query: z.object({
        path: z.string().optional().openapi({ description: 'only this workspace path', example: 'src/main.ts' }),
      }),
    },
    responses: {
      200: {
        description: 'unified diff, empty when nothing changed',
        content: { 'text/x-diff': { schema: z.string() } },
      },
      ...errorResponses(400, 401, 404),
    },
  });
  r.registerPath({
    method: 'get',
    path: '/{id}/archive',
    tags,
    security,
    summary: 'The whole workspace as a streamed .tar.gz (owner or admin)',
    request: { params: z.object({ id: SessionId }) },
    responses: {
      200: {
        description: 'gzip-compressed tar',
        content: { 'application/gzip': { schema: z.string().openapi({ format: 'binary' }) } },
      },
      ...errorResponses(401, 404),
    },
  });
}
