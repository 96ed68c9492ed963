import type { OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from './context.ts';

export const OPENAPI_PATH = '/api/openapi.json';

/** Serves the OpenAPI 3.1 document generated from the same zod schemas the routes validate with. */
export function serveOpenApi(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'a login token or a personal API token',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'cookie', {
    type: 'apiKey',
    in: 'cookie',
    name: '__Host-sy_session',
    description:
      "set by login (named `sy_session` on plain-http loopback origins); unsafe methods must carry this app's Origin",
  });
  app.doc31(OPENAPI_PATH, {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version: '0.1.0',
      description: 'Coding-agent sessions over HTTP. Errors are `{"error":{"code","message","field"?}}`.',
    },
  });
}

/** OpenAPI `security` for routes that take either a bearer token or the session cookie. */
export const AUTHENTICATED: Array<Record<string, string[]>> = [{ bearer: [] }, { cookie: [] }];

/** An OpenAPI `content` entry: a JSON body with this schema. */
export function jsonContent<T extends z.ZodType>(schema: T) {
  return { 'application/json': { schema } };
}
