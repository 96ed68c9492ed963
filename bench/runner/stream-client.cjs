// bench/runner (6)'s model client (model-route.ts): `calls` streaming Messages calls one after
// another on one keep-alive connection, through Node's http module or fetch (undici), or through
// Node's http module on a new connection each (`http-new`: what both CLIs did for a call after a
// pause while the proxy closed their idle connection after 5 s); prints, as JSON, each call's
// first text delta in ms after the call began (timed here).
// argv: base URL, key, http|fetch|http-new, calls, prompt.
const [base, key, kind, calls, prompt] = process.argv.slice(2);
const body = JSON.stringify({
  model: 'm',
  max_tokens: 50,
  stream: true,
  messages: [{ role: 'user', content: prompt }],
});
const headers = { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' };
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true });
const hasDelta = (chunk) => String(chunk).includes('text_delta');

const viaHttp = (fresh) =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = null;
    const options = { method: 'POST', agent: fresh ? false : agent, headers };
    const req = http.request(`${base}/v1/messages`, options, (res) => {
      res.on('data', (chunk) => {
        if (first === null && hasDelta(chunk)) first = performance.now() - t0;
      });
      res.on('end', () => resolve(first));
    });
    req.on('error', reject);
    req.end(body);
  });

const viaFetch = async () => {
  const t0 = performance.now();
  let first = null;
  const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers, body });
  const decoder = new TextDecoder();
  for await (const chunk of res.body)
    if (first === null && hasDelta(decoder.decode(chunk))) first = performance.now() - t0;
  return first;
};

(async () => {
  const out = [];
  for (let i = 0; i < Number(calls); i++)
    out.push(await (kind === 'fetch' ? viaFetch() : viaHttp(kind === 'http-new')));
  agent.destroy();
  console.log(JSON.stringify(out));
})();
