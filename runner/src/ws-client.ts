import type WebSocket from 'ws';

/** A WebSocket's readyState values (fixed by the WebSocket standard; ws uses the same). */
export const ReadyState = { CONNECTING: 0, OPEN: 1, CLOSED: 3 } as const;

let loading: Promise<typeof WebSocket> | undefined;

/**
 * The WebSocket client, loaded on first use: ws and the HTTPS, TLS and zlib modules it requires
 * are ~40 ms of CPU, which a runner starting a fresh session spends once its CLI was spawned
 * rather than before (docs/DESIGN.md "Runner behaviour (serve)").
 */
export function loadWebSocket(): Promise<typeof WebSocket> {
  loading ??= import('ws').then((m) => m.default);
  return loading;
}
