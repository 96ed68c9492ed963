import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/switchyard-offline-model.js', import.meta.url));
const DEADLINE_MS = 15_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

type Proc = {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  firstLine: Promise<string>;
};

function start(args: string[], env: Record<string, string> = {}): Proc {
  // process.execPath: the Node 22 running vitest, so type stripping is available.
  const child = spawn(process.execPath, [BIN, ...args], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  children.push(child);
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const firstLine = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line within ${DEADLINE_MS} ms; stderr: ${err}`)), DEADLINE_MS);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve(out.slice(0, out.indexOf('\n')));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before printing a line; stderr: ${err}`));
    });
  });
  firstLine.catch(() => {}); // observed by the tests that need it
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stdout: () => out, stderr: () => err, exited, firstLine };
}

describe('switchyard-offline-model CLI', () => {
  it('prints one {"url"} line when listening, serves, and exits 0 on SIGTERM', async () => {
    const p = start(['--port', '0']);
    const line = await p.firstLine;
    const { url, port } = JSON.parse(line) as { url: string; port: number };
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ stream: false, tools: [{ name: 'bash' }], messages: [{ role: 'user', content: 'cli' }] }),
    });
    expect(((await res.json()) as { content: { text: string }[] }).content[0]?.text).toBe(
      'Offline model reply to: cli',
    );
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.stdout()).toBe(`${line}\n`); // exactly one line, ever
  });

  it('control routes: open with SWITCHYARD_OFFLINE_CONTROL_TOKEN, closed without it; the token is never printed', async () => {
    const token = 'offline-control-token-for-the-cli-test';
    const p = start([], { SWITCHYARD_OFFLINE_CONTROL_TOKEN: token });
    const { url } = JSON.parse(await p.firstLine) as { url: string };
    expect((await fetch(`${url}/_offline/requests`)).status).toBe(401);
    expect((await fetch(`${url}/_offline/requests`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      200,
    );
    const closed = start([]);
    const other = JSON.parse(await closed.firstLine) as { url: string };
    expect(
      (await fetch(`${other.url}/_offline/requests`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(401);
    p.child.kill('SIGTERM');
    closed.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(await closed.exited).toBe(0);
    expect(p.stdout() + p.stderr()).not.toContain(token);
  });

  it('exits 0 on SIGINT too', async () => {
    const p = start([]);
    await p.firstLine;
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
  });

  it('rejects a bad port with usage on stderr', async () => {
    const p = start(['--port', 'abc']);
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toMatch(/usage: switchyard-offline-model/);
    expect(p.stdout()).toBe('');
  });
});
