import type { request as httpRequest } from 'node:http';

/**
 * The request function for `url`'s protocol: node:http's, or node:https's, which (with TLS, ~25
 * ms of CPU) loads only at the first https request rather than before a runner spawns its CLI.
 * Both are taken from the modules' CommonJS exports: an ES import builds a module's namespace,
 * which runs http's lazy `WebSocket` getter and loads Node's bundled undici into every runner
 * (docs/DESIGN.md "Runner memory").
 */
export function requestFor(url: URL): typeof httpRequest {
  return process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http').request;
}
