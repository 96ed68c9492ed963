import type { Agent, ClientRequestArgs } from 'node:http';
import type { Duplex } from 'node:stream';

// The credential proxy's connections to its one upstream: Node's keep-alive agent for the
// upstream's protocol, which can open the next call's connection (TCP, and TLS for https) before
// the call: at a pooled runner's claim (its first forwarded call is a session's first message) and
// whenever the runner announces a call (after a message, an approval's answer, a tool's result)
// and the last connection idled out; without it such a call would wait for that handshake
// (docs/DESIGN.md "Warm runner pool", "Runner behaviour (serve)").

/** A connection opened ahead and not taken by then is closed: upstreams close idle ones too. */
export const SPARE_MAX_AGE_MS = 3_000;

/**
 * Node's global agents' settings (what the proxy used before): a free connection idle for 5 s is
 * closed here before a server's own 5 s default can close it under a call; no Nagle delay.
 */
const OPTIONS = { keepAlive: true, scheduling: 'lifo', timeout: 5_000, noDelay: true } as const;

export interface UpstreamAgent {
  agent: Agent;
  /** Opens a connection the next call takes, unless one is already open or free. */
  preconnect(): void;
  /** Closes the spare and every free connection. */
  destroy(): void;
}

export function upstreamAgent(upstream: URL, spareMaxAgeMs = SPARE_MAX_AGE_MS): UpstreamAgent {
  const https = upstream.protocol === 'https:';
  // The CommonJS exports, as in http-client.ts: https (with TLS) loads only for an https upstream,
  // and an ES import of net would build its namespace, loading the modules behind its lazy exports
  // before the CLI's spawn. https.Agent is an http.Agent whose createConnection speaks TLS.
  const Base: typeof Agent = process.getBuiltinModule(https ? 'node:https' : 'node:http').Agent;
  const { isIP } = process.getBuiltinModule('node:net');
  const host = upstream.hostname.replace(/^\[|\]$/g, '');
  const target: ClientRequestArgs = {
    host,
    port: Number(upstream.port) || (https ? 443 : 80),
    // What Node's agent sets for a request to a name (SNI); never for an address.
    ...(https && isIP(host) === 0 && { servername: host }),
  };

  class Preconnecting extends Base {
    #spare: { socket: Duplex; name: string; timer: NodeJS.Timeout } | undefined;

    override createConnection(options: ClientRequestArgs, callback?: (err: Error | null, s: Duplex) => void) {
      const spare = this.#take();
      if (spare !== undefined && !spare.socket.destroyed && spare.name === this.getName(options)) return spare.socket;
      spare?.socket.destroy();
      return super.createConnection(options, callback);
    }

    preconnect(): void {
      const name = this.getName(target);
      if (this.#spare !== undefined || (this.freeSockets[name]?.length ?? 0) > 0) return;
      // With the agent's options, as Node's agent passes them for a call's connection.
      const socket = super.createConnection({ ...OPTIONS, ...target });
      if (socket == null) return;
      // Nobody listens until a call takes it; a refused or reset connection is simply not taken.
      socket.on('error', ignore);
      const timer = setTimeout(() => this.#take()?.socket.destroy(), spareMaxAgeMs).unref();
      this.#spare = { socket, name, timer };
    }

    override destroy(): void {
      this.#take()?.socket.destroy();
      super.destroy();
    }

    #take() {
      const spare = this.#spare;
      this.#spare = undefined;
      if (spare !== undefined) {
        clearTimeout(spare.timer);
        spare.socket.off('error', ignore);
      }
      return spare;
    }
  }

  const agent = new Preconnecting(OPTIONS);
  return { agent, preconnect: () => agent.preconnect(), destroy: () => agent.destroy() };
}

function ignore(): void {}
