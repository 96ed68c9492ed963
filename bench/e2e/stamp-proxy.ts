// A loopback proxy in front of the offline model that stamps every streamed text delta with the
// wall-clock time (ms, µs precision) at which it left for the CLI, and the time the request it
// answers had fully arrived: the delta's text becomes `⟨T1764460000123.456R1764460000101.234⟩`.
// An SSE client on the same machine subtracts T from its own receipt time (the delivery latency
// model → CLI → runner → hub → Worker → SSE client) and R from its send time (the way in).
// Run: node bench/e2e/stamp-proxy.ts --upstream http://127.0.0.1:PORT  → prints {"url": ...}
import http from 'node:http';

const upstream = process.argv[process.argv.indexOf('--upstream') + 1] as string;
const wall = () => (performance.timeOrigin + performance.now()).toFixed(3);

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const arrived = wall();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    const up = http.request(`${upstream}${req.url ?? '/'}`, { method: req.method, headers }, (ur) => {
      const h = { ...ur.headers };
      delete h['content-length'];
      res.writeHead(ur.statusCode ?? 502, h);
      const sse = String(ur.headers['content-type'] ?? '').includes('text/event-stream');
      if (!sse) {
        ur.pipe(res);
        return;
      }
      let buf = '';
      ur.setEncoding('utf8');
      ur.on('data', (d: string) => {
        buf += d;
        let out = '';
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          let line = buf.slice(0, nl + 1);
          buf = buf.slice(nl + 1);
          if (line.startsWith('data: ') && line.includes('"text_delta"')) {
            const ev = JSON.parse(line.slice(6)) as { delta: { text: string } };
            ev.delta.text = `⟨T${wall()}R${arrived}⟩`;
            line = `data: ${JSON.stringify(ev)}\n`;
          }
          out += line;
        }
        if (out !== '') res.write(out);
      });
      ur.on('end', () => res.end(buf));
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    up.end(Buffer.concat(chunks));
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => process.exit(0));
