import { RunnerCloseCode, bearerToken } from '@switchyard/protocol';
import { type AppDeps, newRouter } from '../context.ts';
import { apiError } from '../errors.ts';
import { poolConnect } from '../pool/routes.ts';
import { MIN_SECRET_LENGTH, verifyRunnerToken } from './token.ts';

// GET /internal/runner/connect: the runner link's front door. The token is checked here, so a
// bad one never wakes a hub; a refusal is a WebSocket closed with a RunnerCloseCode (the runner
// stops for good on those) rather than an HTTP status a proxy might rewrite.

function refuse(code: number, reason: string): Response {
  const pair = new WebSocketPair();
  const server = pair[1];
  server.accept();
  server.close(code, reason);
  return new Response(null, { status: 101, webSocket: pair[0] });
}

export function runnerLinkRoutes(deps: AppDeps) {
  const app = newRouter();
  app.get('/connect', async (c) => {
    if (c.req.header('Upgrade')?.toLowerCase() !== 'websocket') {
      return apiError(c, 400, 'invalid_request', 'this endpoint takes a WebSocket upgrade');
    }
    const secret = c.env.RUNNER_TOKEN_SECRET ?? '';
    if (secret.length < MIN_SECRET_LENGTH)
      return refuse(RunnerCloseCode.unauthorized, 'runner links are not configured');
    const token = bearerToken(c.req.header('Authorization'));
    if (token === undefined) return refuse(RunnerCloseCode.unauthorized, 'a runner token is required');
    const verdict = await verifyRunnerToken(secret, token, deps.clock());
    if (!verdict.ok) {
      return refuse(
        RunnerCloseCode.unauthorized,
        verdict.reason === 'expired' ? 'runner token expired' : 'runner token invalid',
      );
    }
    const { sessionId, launchId } = verdict.claims;
    const asked = c.req.query('session');
    if (asked !== undefined && asked !== sessionId) {
      return refuse(RunnerCloseCode.unauthorized, 'runner token is for another session');
    }
    // The hub decides what the token may do: a bootstrap token only until the first welcome,
    // a credential only for the runner it names.
    const headers = new Headers({
      Upgrade: 'websocket',
      'X-Switchyard-Launch': launchId,
      'X-Switchyard-Token-Kind': verdict.claims.kind,
      ...(verdict.claims.kind === 'credential' && { 'X-Switchyard-Token-Runner': verdict.claims.runnerId }),
    });
    const stub = c.env.SESSION_HUB.get(c.env.SESSION_HUB.idFromName(sessionId));
    return stub.fetch('https://hub/runner', { headers });
  });
  // Pooled runners (no session yet) dial the pool coordinator (docs/DESIGN.md "Warm runner pool").
  app.get('/pool', (c) => poolConnect(c, deps));
  return app;
}
