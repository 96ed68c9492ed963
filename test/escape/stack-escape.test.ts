// The loopback escape, attempted for real: the stack `npm start` runs (startStack: wrangler dev,
// the local runner host, the offline model), a real claude session and then a real pi session,
// and each agent's shell (the offline model scripts a shell call) going after every service on
// the machine's loopback:
//   - the runner host: RunTask unsigned and with a made-up SigV4 signature, both overriding
//     NODE_OPTIONS (code as the developer, outside the sandbox); StopTask of another session's
//     runner; the probe route (a process per call); the task list;
//   - the offline model: its control routes (every session's prompts; scripting another
//     session's answers) and a direct model call carrying data out;
//   - every other port the stack listens on: the edge, wrangler's and workerd's own ports, an
//     inspector if any.
// Each attempt must not even connect (the CLI's network namespace has no route to them), and
// none may have an effect: no task started, the other runner alive and answering, no marker file
// written by NODE_OPTIONS, nothing recorded by the model. The script's own model proxy must
// answer, so a shell without network tools cannot pass for a wall.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listProcs } from '@switchyard/runner/host';
import { MODEL_URL } from '@switchyard/runner/sandbox';
import type { Stack } from '../../scripts/start.ts';
import { Api, type SseStream } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;
const r = randomBytes(6).toString('hex');
const MARKER = join(tmpdir(), `sy-stack-escape-${r}`);
const EXFIL = `EXFIL-${r}`;

let running: TestStack;
let stack: Stack;
let admin: Api;
const streams: SseStream[] = [];

beforeAll(async () => {
  running = await startTestStack('stack-escape');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await Promise.all(streams.map((s) => s.close()));
  await running?.stop();
  rmSync(MARKER, { force: true });
}, 120_000);

async function session(title: string, backend: 'claude' | 'pi' = 'claude'): Promise<string> {
  const res = await admin.call<{ id: string; backend: string }>('POST', '/api/sessions', { title });
  expect(res.status, res.text).toBe(201);
  expect(res.body.backend).toBe(backend);
  return res.body.id;
}

/** Sends a message and waits for its turn.done; returns that turn's events. */
async function turn(sessionId: string, text: string) {
  const sent = await admin.call<{ messageId: string }>('POST', `/api/sessions/${sessionId}/messages`, { text });
  expect(sent.status, sent.text).toBe(202);
  const sse = await admin.events(sessionId);
  streams.push(sse);
  const done = await sse.turnDone(sent.body.messageId, TURN_MS);
  return { done, events: sse.ofMessage(sent.body.messageId) };
}

/** Every TCP port some process of the stack listens on (wrangler, workerd, the host, the model). */
function stackListeningPorts(): number[] {
  for (const s of stack.services) s.sample();
  const groups = new Set(stack.services.flatMap((s) => [...s.groups]));
  const pids = listProcs()
    .filter((p) => groups.has(p.pgid))
    .map((p) => p.pid);
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m?.[1]) inodes.add(m[1]);
      } catch {
        // closed meanwhile
      }
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is the 10th field.
      if (f[3] === '0A' && f[9] !== undefined && inodes.has(f[9])) ports.add(parseInt(f[1]?.split(':')[1] ?? '0', 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

function attackScript(o: { victimArn: string; ports: number[] }): string {
  const host = stack.hostUrl;
  const model = stack.offlineModelUrl as string;
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
  const forged = `AWS4-HMAC-SHA256 Credential=${stack.hostCredentials.accessKeyId}/${amzDate.slice(0, 8)}/us-east-1/ecs/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=${'ab'.repeat(32)}`;
  const runTask = JSON.stringify({
    cluster: 'switchyard-local',
    taskDefinition: 'switchyard-runner',
    networkConfiguration: { awsvpcConfiguration: { subnets: ['subnet-local'] } },
    overrides: {
      containerOverrides: [
        {
          name: 'runner',
          environment: [
            {
              name: 'NODE_OPTIONS',
              value: `--import=data:text/javascript,import('node:fs').then(f=>f.writeFileSync('${MARKER}','pwned'))`,
            },
          ],
        },
      ],
    },
  });
  const stopTask = JSON.stringify({ cluster: 'switchyard-local', task: o.victimArn, reason: 'pwned' });
  const exfil = JSON.stringify({ model: 'x', max_tokens: 5, messages: [{ role: 'user', content: EXFIL }] });
  const ecs = (op: string) =>
    `-H 'x-amz-target: AmazonEC2ContainerServiceV20141113.${op}' -H 'content-type: application/x-amz-json-1.1'`;
  const signed = `-H 'x-amz-date: ${amzDate}' -H 'authorization: ${forged}'`;
  return [
    `try_() { n=$1; shift; c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$@"); echo "ATTEMPT $n rc=$? code=$c"; }`,
    `cat > /tmp/run.json <<'EOF'\n${runTask}\nEOF`,
    `cat > /tmp/stop.json <<'EOF'\n${stopTask}\nEOF`,
    `cat > /tmp/exfil.json <<'EOF'\n${exfil}\nEOF`,
    // The model URL the CLI was given (claude: its env; pi: models.json, always MODEL_URL under bubblewrap).
    `try_ own-model-proxy "\${ANTHROPIC_BASE_URL:-${MODEL_URL}}/"`,
    `try_ host-runtask-unsigned -X POST ${host}/ ${ecs('RunTask')} --data-binary @/tmp/run.json`,
    `try_ host-runtask-forged -X POST ${host}/ ${ecs('RunTask')} ${signed} --data-binary @/tmp/run.json`,
    `try_ host-stoptask-victim -X POST ${host}/ ${ecs('StopTask')} ${signed} --data-binary @/tmp/stop.json`,
    `try_ host-probe -X POST ${host}/switchyard/probe -d '{"backend":"pi"}'`,
    `try_ host-tasks ${host}/switchyard/tasks`,
    `try_ model-requests ${model}/_offline/requests`,
    `try_ model-queue -X POST ${model}/_offline/queue -d '{"tool":"shell","command":"id"}'`,
    `try_ model-direct -X POST ${model}/v1/messages -H 'content-type: application/json' --data-binary @/tmp/exfil.json`,
    `try_ edge ${stack.url}/healthz`,
    ...o.ports.map((p) => `try_ port-${p} http://127.0.0.1:${p}/json/version`),
    `echo "ROUTES $(tail -n +2 /proc/net/route | wc -l)"`,
  ].join('\n');
}

describe('an agent in a session of the npm start stack, going after loopback services', () => {
  it('no port of the stack is a DevTools inspector (none was asked for)', async () => {
    const ports = stackListeningPorts();
    const inspectors: string[] = [];
    for (const port of ports) {
      for (const path of ['/json/version', '/json/list']) {
        const text = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) }).then(
          (res) => res.text(),
          () => '',
        );
        if (/webSocketDebuggerUrl|Protocol-Version|devtoolsFrontendUrl/.test(text))
          inspectors.push(`${port}${path}: ${text.slice(0, 200)}`);
      }
    }
    expect(ports.length).toBeGreaterThanOrEqual(3);
    expect(inspectors).toEqual([]);
  });

  // Another session with a live runner: the StopTask target, which must survive every attack.
  let victim: string;
  let victimArn: string;
  const attackers: string[] = [];

  it.each(['claude', 'pi'] as const)(
    '%s: gets nothing — no connection to the runner host, the offline model, the edge or any other port, and no effect',
    async (backend) => {
      try {
        if (backend === 'claude') {
          victim = await session('victim');
          expect((await turn(victim, 'hello')).done.data.stopReason).toBe('end_turn');
          victimArn =
            (await stack.runners()).find((t) => t.sessionId === victim && t.lastStatus === 'RUNNING')?.taskArn ?? '';
          expect(victimArn).not.toBe('');
        } else {
          // The switch probes pi through the launcher's signed /switchyard/probe.
          const put = await admin.call('PUT', '/api/admin/settings', { llmBackend: 'pi' });
          expect(put.status, put.text).toBe(200);
        }
        const attacker = await session(`attacker ${backend}`, backend);
        attackers.push(attacker);
        const ports = stackListeningPorts();
        // The edge, the host, the model at least (wrangler and workerd add their own).
        expect(ports.length).toBeGreaterThanOrEqual(3);
        const script = Buffer.from(attackScript({ victimArn, ports })).toString('base64');
        const { done, events } = await turn(
          attacker,
          `#offline ${JSON.stringify({ tool: 'shell', command: `echo ${script} | base64 -d > /tmp/a.sh; sh /tmp/a.sh` })}`,
        );
        expect(done.data.stopReason).toBe('end_turn');
        const output = events
          .filter((e) => e.event === 'tool.result')
          .map((e) => String(e.data.output))
          .join('\n');
        const attempts = [...output.matchAll(/^ATTEMPT (\S+) rc=(\d+) code=(\d+)$/gm)].map((m) => ({
          name: m[1],
          rc: Number(m[2]),
          code: m[3],
        }));
        const targets = attempts.filter((a) => a.name !== 'own-model-proxy');
        expect(targets.length, output).toBe(9 + ports.length);
        // Not one connection: curl's "couldn't connect", no HTTP status.
        expect(
          targets.filter((a) => a.rc !== 7 || a.code !== '000'),
          output,
        ).toEqual([]);
        // The control: the shell has curl and its own model route works.
        expect(
          attempts.find((a) => a.name === 'own-model-proxy'),
          output,
        ).toMatchObject({ rc: 0, code: '200' });
        expect(output).toContain('ROUTES 0');

        // And no effect.
        const tasks = await stack.runners();
        expect(tasks.map((t) => t.sessionId).sort()).toEqual([victim, ...attackers].sort());
        expect(tasks.find((t) => t.taskArn === victimArn)?.lastStatus).toBe('RUNNING');
        expect(existsSync(MARKER)).toBe(false);
        const recorded = await fetch(`${stack.offlineModelUrl}/_offline/requests`, {
          headers: { authorization: `Bearer ${stack.offlineControlToken}` },
        });
        expect(JSON.stringify(await recorded.json())).not.toContain(EXFIL);
        // The other session still answers on the same runner.
        expect((await turn(victim, `still there after the ${backend} attack?`)).done.data.stopReason).toBe('end_turn');
        expect((await stack.runners()).filter((t) => t.sessionId === victim).map((t) => t.taskArn)).toEqual([
          victimArn,
        ]);
      } catch (err) {
        throw new Error(
          `${err instanceof Error ? err.message : String(err)}\n--- stack output (tail):\n${running.log.slice(-40).join('\n')}`,
        );
      }
    },
    600_000,
  );
});
