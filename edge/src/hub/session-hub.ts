import { DurableObject } from 'cloudflare:workers';

// Placeholder so the SESSION_HUB binding declared in wrangler.toml resolves: workerd refuses
// to start a Worker whose Durable Object binding names a class the module does not export.
// The hub issue replaces this class; until then every request to it is refused.
export class SessionHub extends DurableObject<Env> {
  override async fetch(): Promise<Response> {
    return Response.json(
      { error: { code: 'not_implemented', message: 'the session hub is not implemented yet' } },
      { status: 501 },
    );
  }
}
