// Runs INSIDE the bubblewrap sandbox, in the CLI's own network namespace (`--unshare-net`: only
// a loopback interface, no route anywhere). It listens on that namespace's 127.0.0.1:<port>, the
// model URL the CLI was given, and relays each connection to the runner's credential proxy
// through the unix socket bound into the sandbox — the one way out of the namespace. Then it
// starts the CLI with its own stdio and environment and ends as the CLI ends.
//
//   node netns-forwarder.mjs <port> <socket> -- <command> [args...]
//
// Node builtins only: it runs under the runner's Node with nothing else of the runner visible.
// Plain JavaScript, not TypeScript: Node would load its type stripper (~17 MiB, ~40 ms) into a
// process that lives as long as the CLI, once per session.
import { spawn } from 'node:child_process';
import net from 'node:net';

const [portArg, socketPath, dashes, command, ...args] = process.argv.slice(2);
const port = Number(portArg);
if (!Number.isInteger(port) || port <= 0 || port > 65535 || !socketPath || dashes !== '--' || !command) {
  process.stderr.write(
    'switchyard netns-forwarder: usage: netns-forwarder.mjs <port> <socket> -- <command> [args...]\n',
  );
  process.exit(2);
}

const server = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  // Either side failing ends both; the CLI sees a reset and reports it like any network error.
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.on('error', (err) => {
  process.stderr.write(`switchyard netns-forwarder: cannot listen on 127.0.0.1:${port}: ${err.message}\n`);
  process.exit(1);
});

// Listening before the CLI starts: its first model call cannot race the forwarder.
server.listen(port, '127.0.0.1', () => {
  const child = spawn(command, args, { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`switchyard netns-forwarder: cannot start ${command}: ${err.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    server.close();
    if (signal !== null) {
      // Die of the same signal, so the runner reports the CLI's own end.
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
});
