import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitServer, type GitServer } from '../../test/helpers/git-server.ts';
import { cloneRepository, type CloneOptions } from '../src/workspace/clone.ts';

// cloneRepository with the real git against real loopback servers (docs/DESIGN.md "Start from a
// repository"): the address git connects to is the one that was checked (a name that no resolver
// knows still clones when it is pinned), a name resolving inside is refused before git runs, a
// redirect is not followed, and a server that never answers is cut off by the deadline.

let git: GitServer;
const dirs: string[] = [];

beforeAll(async () => {
  git = await startGitServer();
});

afterAll(async () => {
  await git.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workspace(): string {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-clone-'));
  dirs.push(d);
  return d;
}

function options(extra: Partial<CloneOptions> = {}): CloneOptions {
  return { dir: workspace(), allowLoopback: true, timeoutMs: 20_000, path: process.env.PATH, ...extra };
}

/** A loopback server answering every request with `handler` (and counting them). */
async function server(
  handler: http.RequestListener,
): Promise<{ port: number; hits: () => number; stop: () => Promise<void> }> {
  let hits = 0;
  const s = http.createServer((req, res) => {
    hits += 1;
    handler(req, res);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    port: (s.address() as AddressInfo).port,
    hits: () => hits,
    stop: async () => {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

describe('cloneRepository', () => {
  it('connects to the address it checked: a name only the pinned resolution knows clones', async () => {
    // `.invalid` never resolves (RFC 6761): git can only reach the server through the pin.
    const url = `http://git.switchyard.invalid:${git.port}/repo.git`;
    const o = options({ resolve: async () => ['127.0.0.1'] });
    const r = await cloneRepository({ url, ref: 'v1' }, o);
    expect(r).toEqual({ ok: true, value: { url, ref: 'v1', commit: git.refs.v1.commit } });
    expect(readFileSync(join(o.dir, 'src/greeting.txt'), 'utf8')).toBe('hello from v1\n');
  });

  it('refuses a name resolving to a private or (in production) loopback address before git runs', async () => {
    const before = git.requests();
    const url = `http://git.switchyard.invalid:${git.port}/repo.git`;
    const inside = await cloneRepository({ url }, options({ resolve: async () => ['10.0.0.7'] }));
    expect(inside).toMatchObject({ ok: false, error: { code: 'repository_clone_failed' } });
    expect(inside.ok || inside.error.message).toMatch(
      /resolves to 10\.0\.0\.7, a private, link-local or reserved address/,
    );
    const loop = await cloneRepository({ url }, options({ allowLoopback: false, resolve: async () => ['127.0.0.1'] }));
    expect(loop.ok || loop.error.message).toMatch(/resolves to 127\.0\.0\.1, a loopback address/);
    expect(git.requests()).toBe(before);
  });

  it('git connects to the host that was checked, however the URL is spelled', async () => {
    // The URL standard reads `\` as `/`: host git.switchyard.invalid, the decoy's port. libcurl
    // reads it as part of a user name: host 127.0.0.1, the git server's port, which nobody checked.
    const decoy = await server((_req, res) => res.writeHead(404).end());
    try {
      const before = git.requests();
      const url = `http://git.switchyard.invalid:${decoy.port}\\@127.0.0.1:${git.port}/repo.git`;
      const r = await cloneRepository({ url }, options({ resolve: async () => ['127.0.0.1'] }));
      expect(r).toMatchObject({ ok: false, error: { code: 'repository_clone_failed' } });
      expect(git.requests()).toBe(before);
      expect(decoy.hits()).toBeGreaterThan(0);
    } finally {
      await decoy.stop();
    }
  });

  it('a resolver that never answers ends the clone at the deadline too', async () => {
    const url = `http://git.switchyard.invalid:${git.port}/repo.git`;
    const r = await cloneRepository({ url }, options({ timeoutMs: 500, resolve: () => new Promise(() => undefined) }));
    expect(r.ok || r.error.message).toMatch(/git\.switchyard\.invalid did not resolve: no answer within 1 s$/);
  });

  it('does not follow a redirect (it could lead to a host nobody checked)', async () => {
    const redirect = await server((_req, res) => {
      res.writeHead(302, { location: `${git.url}/info/refs?service=git-upload-pack` });
      res.end();
    });
    try {
      const before = git.requests();
      const r = await cloneRepository({ url: `http://127.0.0.1:${redirect.port}/repo.git` }, options());
      expect(r.ok).toBe(false);
      expect(redirect.hits()).toBeGreaterThan(0);
      expect(git.requests()).toBe(before);
    } finally {
      await redirect.stop();
    }
  });

  it('a server that never answers is cut off at the deadline, and the attempt leaves no .git behind', async () => {
    const silent = await server(() => undefined);
    try {
      const o = options({ timeoutMs: 1500 });
      const r = await cloneRepository({ url: `http://127.0.0.1:${silent.port}/repo.git` }, o);
      expect(r).toMatchObject({ ok: false, error: { code: 'repository_clone_failed', retryable: true } });
      expect(r.ok || r.error.message).toMatch(/timed out after 2 s$/);
      expect(() => readFileSync(join(o.dir, '.git', 'HEAD'))).toThrow();
    } finally {
      await silent.stop();
    }
  });

  it('a git that fails with nothing on stderr is reported with its exit code', async () => {
    // The runner finds git on the PATH it is given: this one exits 3 and says nothing.
    const bin = workspace();
    const fake = join(bin, 'git');
    writeFileSync(fake, '#!/bin/sh\nexit 3\n');
    chmodSync(fake, 0o755);
    const r = await cloneRepository({ url: git.url }, options({ path: bin }));
    expect(r).toMatchObject({ ok: false, error: { code: 'repository_clone_failed' } });
    expect(r.ok || r.error.message).toMatch(/git exited 3$/);
  });
});
