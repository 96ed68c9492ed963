// bench/runner/upstream-connect: what a model call after a pause waits for at the credential proxy.
// The proxy closes a free upstream connection after 5 s idle (runner/src/sandbox/upstream-agent.ts),
// so a person's next message meets no open connection to the provider: its call waits for TCP and
// TLS. The runner tells the proxy a
// call is coming when it writes a message to the CLI (and after an approval's answer and a tool's
// result: `prepareCall`), and the proxy opens the connection while the CLI builds its call. Here the provider is a local https server (a key and
// certificate made for the run with openssl, trusted through NODE_EXTRA_CA_CERTS), and the CLI is
// a client that calls `--cli-ms` after the message was written (bare claude takes ~13 ms from its
// stdin to its request, pi ~3 ms: bench/e2e). Per round, interleaved: the call with an open
// connection (keep-alive, the floor), after a pause without notice, after a pause with
// `prepareCall` at the write. Medians, ms from the write to the answer at the client. Local TLS has
// no network round trips: against a provider, TCP and TLS 1.3 add two of them, which the same
// notice overlaps with the CLI's build time.
// Run: node bench/runner/upstream-connect.ts [--rounds 21] [--cli-ms 3,13]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type CredentialProxy, startCredentialProxy } from '../../runner/src/sandbox/credential-proxy.ts';
import { median } from '../stats.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '21' },
    'cli-ms': { type: 'string', default: '3,13' },
    certs: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const cliMs = (values['cli-ms'] ?? '').split(',').map(Number);
if (!Number.isInteger(rounds) || rounds < 1 || cliMs.some((ms) => !Number.isFinite(ms) || ms < 0)) {
  console.error('usage: node bench/runner/upstream-connect.ts [--rounds N] [--cli-ms 3,13]');
  process.exit(2);
}

if (values.certs === undefined) {
  // The certificate must be trusted when Node starts (NODE_EXTRA_CA_CERTS), so the run is a child.
  const dir = mkdtempSync(join(tmpdir(), 'sy-bench-upstream-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const child = spawnSync(process.execPath, [...process.argv.slice(1), '--certs', dir], {
      stdio: 'inherit',
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
    });
    process.exitCode = child.status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  await measure(values.certs);
}

async function measure(certs: string) {
  const provider = https.createServer(
    { key: readFileSync(join(certs, 'key.pem')), cert: readFileSync(join(certs, 'cert.pem')) },
    (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    },
  );
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  const upstream = `https://localhost:${(provider.address() as AddressInfo).port}`;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  // The CLI's call: a new connection to the proxy in every mode (the modes differ only upstream),
  // the answer read whole.
  const call = (proxy: CredentialProxy) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        `${proxy.url}/v1/messages`,
        {
          method: 'POST',
          agent: false,
          headers: { 'x-api-key': proxy.sessionKey, 'content-type': 'application/json' },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`the proxy answered ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });

  type Mode = 'open connection' | 'after a pause' | 'after a pause, prepareCall';
  const modes: Mode[] = ['open connection', 'after a pause', 'after a pause, prepareCall'];
  console.log(
    `bench/runner/upstream-connect: ${rounds} rounds, an https provider on loopback (TLS 1.3, P-256), ms from the message written to the CLI to the call's answer, medians`,
  );
  for (const ms of cliMs) {
    const times = new Map<Mode, number[]>(modes.map((m) => [m, []]));
    for (let i = 0; i < rounds; i++) {
      for (const mode of modes) {
        // A new proxy has no upstream connection, as one whose free connection idled out.
        const proxy = await startCredentialProxy({ upstream, apiKey: 'bench-key' });
        try {
          if (mode === 'open connection') await call(proxy);
          const t0 = performance.now();
          if (mode === 'after a pause, prepareCall') proxy.prepareCall();
          // The CLI reads the message and builds its call (a modelled delay, not synchronization).
          await sleep(ms);
          await call(proxy);
          times.get(mode)?.push(performance.now() - t0);
        } finally {
          await proxy.close();
        }
      }
    }
    const med = (mode: Mode) => median(times.get(mode) ?? []);
    const floor = med('open connection');
    console.log(`  the CLI calls ${ms} ms after the write:`);
    for (const mode of modes)
      console.log(`    ${mode.padEnd(28)} ${med(mode).toFixed(2).padStart(7)} ms  ${(med(mode) / floor).toFixed(2)}x`);
    console.log(
      `    prepareCall hides ${(med('after a pause') - med('after a pause, prepareCall')).toFixed(2)} ms of the ${(med('after a pause') - floor).toFixed(2)} ms a new connection costs`,
    );
  }
  provider.close();
}
