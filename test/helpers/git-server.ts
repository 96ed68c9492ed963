// A git server on loopback for tests: a bare repository this helper builds, served over smart
// HTTP by git's own `git http-backend` run as a CGI per request behind a node http server on
// 127.0.0.1:0. Real git on both ends; nothing leaves the machine.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface GitServer {
  /** `http://127.0.0.1:PORT/repo.git` */
  url: string;
  port: number;
  /** The files of each ref, and the commit it names. */
  refs: Record<'main' | 'feature' | 'v1', { commit: string; files: Record<string, string> }>;
  /** Requests served (to tell whether a runner cloned). */
  requests(): number;
  stop(): Promise<void>;
}

const GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim();
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

/**
 * main: README.md and src/greeting.txt ("from main"); tag v1 (annotated) one commit earlier
 * (greeting "from v1"); branch feature: main plus feature.txt.
 */
function buildRepository(root: string): GitServer['refs'] {
  const work = join(root, 'work');
  mkdirSync(work);
  git(work, 'init', '--quiet', '--initial-branch=main');
  const v1 = { 'README.md': '# loopback repository\n', 'src/greeting.txt': 'hello from v1\n' };
  writeFiles(work, v1);
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'first');
  git(work, 'tag', '-a', 'v1', '-m', 'version one');
  const v1Commit = git(work, 'rev-parse', 'HEAD');
  const main = { ...v1, 'src/greeting.txt': 'hello from main\n' };
  writeFiles(work, main);
  git(work, 'commit', '--quiet', '-am', 'second');
  const mainCommit = git(work, 'rev-parse', 'HEAD');
  git(work, 'checkout', '--quiet', '-b', 'feature');
  const feature = { ...main, 'feature.txt': 'only on the feature branch\n' };
  writeFiles(work, feature);
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'feature');
  const featureCommit = git(work, 'rev-parse', 'HEAD');
  git(root, 'clone', '--quiet', '--bare', work, 'repo.git');
  git(join(root, 'repo.git'), 'symbolic-ref', 'HEAD', 'refs/heads/main');
  return {
    main: { commit: mainCommit, files: main },
    feature: { commit: featureCommit, files: feature },
    v1: { commit: v1Commit, files: v1 },
  };
}

/** `port`: listen there (a test that first needs nothing listening on it); default any free one. */
export async function startGitServer(opts: { port?: number } = {}): Promise<GitServer> {
  const root = mkdtempSync(join(tmpdir(), 'switchyard-git-'));
  const refs = buildRepository(root);
  let served = 0;
  const server = http.createServer((req, res) => {
    served += 1;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] !== undefined && { CONTENT_LENGTH: req.headers['content-length'] }),
        ...(req.headers['content-encoding'] !== undefined && {
          HTTP_CONTENT_ENCODING: req.headers['content-encoding'],
        }),
        ...(typeof req.headers['git-protocol'] === 'string' && { GIT_PROTOCOL: req.headers['git-protocol'] }),
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    // CGI output: headers (a `Status:` among them), a blank line, the body.
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const at = line.indexOf(':');
        const name = line.slice(0, at).trim();
        const value = line.slice(at + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.stdout.on('end', () => {
      if (!headersDone) res.writeHead(502);
      res.end();
    });
    cgi.on('error', () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/repo.git`,
    port,
    refs,
    requests: () => served,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
