import { describe, expect, it } from 'vitest';
import { call, makeApp } from './helpers.ts';

/** The parts of the generated OpenAPI 3.1 document this test reads. */
interface OpenApiDocument {
  openapi: string;
  /** Path → method → operation. */
  paths: Record<string, Record<string, unknown>> & {
    '/api/auth/login': { post: { responses: Record<string, unknown> } };
  };
  components: {
    schemas: {
      SettingsPatch: { properties: { llmBackend: { enum: string[] } } };
      Error: { properties: { error: { properties: { code: { enum: string[] } } } } };
    };
    securitySchemes: { bearer: Record<string, unknown> };
  };
}

describe('GET /api/openapi.json', () => {
  it('is an OpenAPI 3.1 document covering every route, generated from the zod schemas', async () => {
    const { app } = makeApp();
    const r = await call<OpenApiDocument>(app, 'GET', '/api/openapi.json');
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe('3.1.0');
    const ops = Object.entries(r.body.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(ops.sort()).toEqual(
      [
        'GET /healthz',
        'POST /api/auth/login',
        'POST /api/auth/logout',
        'GET /api/me',
        'POST /api/me/password',
        'POST /api/tokens',
        'GET /api/tokens',
        'GET /api/tokens/{id}',
        'DELETE /api/tokens/{id}',
        'GET /api/settings',
        'GET /api/admin/runner-pool',
        'PUT /api/admin/runner-pool',
        'GET /api/admin/users',
        'POST /api/admin/users',
        'GET /api/admin/users/{id}',
        'PATCH /api/admin/users/{id}',
        'DELETE /api/admin/users/{id}',
        'GET /api/admin/settings',
        'PUT /api/admin/settings',
        'GET /api/admin/audit',
        'GET /api/admin/sessions',
        'POST /api/sessions',
        'POST /api/sessions/{id}/approvals/{approvalId}',
        'GET /api/sessions',
        'GET /api/sessions/{id}',
        'PATCH /api/sessions/{id}',
        'DELETE /api/sessions/{id}',
        'POST /api/sessions/{id}/messages',
        'POST /api/sessions/{id}/start',
        'POST /api/sessions/{id}/interrupt',
        'GET /api/sessions/{id}/events',
        'GET /api/sessions/{id}/transcript',
        'GET /api/sessions/{id}/files',
        'PUT /api/sessions/{id}/files/{path}',
        'GET /api/sessions/{id}/files/{path}',
        'DELETE /api/sessions/{id}/files/{path}',
        'GET /api/sessions/{id}/archive',
        'GET /api/sessions/{id}/diff',
      ].sort(),
    );
    const schemas = r.body.components.schemas;
    expect(schemas.SettingsPatch.properties.llmBackend.enum).toEqual(['claude', 'pi']);
    expect(schemas.Error.properties.error.properties.code.enum).toContain('rate_limited');
    expect(r.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(r.body.paths['/api/auth/login'].post.responses).toHaveProperty('429');
  });
});
