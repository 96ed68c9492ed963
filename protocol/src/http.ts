// HTTP details both the edge and the runner side depend on.

/** The edge route a runner dials for its link (a WebSocket upgrade). */
export const RUNNER_CONNECT_PATH = '/internal/runner/connect';

const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i;

/** The token of an `Authorization: Bearer <token>` header, or undefined when it is not one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}
