import { describe, expect, it } from 'vitest';
import { cloneEnv, cloneError, cloneSteps, decideHost, gitOptions, gitReason } from '../../src/workspace/clone-plan.ts';

// The pure half of cloning a session's repository (docs/DESIGN.md "Start from a repository"); the
// spawns are exercised end to end in test/e2e/repository.test.ts.

describe('decideHost', () => {
  it('pins a name to exactly the addresses it resolved to, when every one is public', () => {
    expect(decideHost('https://git.example.org/r.git', ['93.184.215.14', '2606:4700::1111'], false)).toEqual({
      ok: true,
      resolve: 'git.example.org:443:93.184.215.14,[2606:4700::1111]',
    });
    expect(decideHost('http://git.example.org:8080/r.git', ['93.184.215.14'], false)).toEqual({
      ok: true,
      resolve: 'git.example.org:8080:93.184.215.14',
    });
  });

  it('refuses a name that resolves to any loopback, private or link-local address (DNS cannot point it inside)', () => {
    for (const bad of ['127.0.0.1', '10.0.0.5', '169.254.170.2', 'fd00::1', '::ffff:192.168.0.1']) {
      const d = decideHost('https://git.example.org/r.git', ['93.184.215.14', bad], false);
      expect({ bad, ok: d.ok }).toEqual({ bad, ok: false });
    }
    const d = decideHost('https://git.example.org/r.git', ['10.0.0.5'], false);
    expect(d).toEqual({
      ok: false,
      message:
        'git.example.org resolves to 10.0.0.5, a private, link-local or reserved address; repositories are cloned only from public hosts',
    });
    expect(decideHost('https://git.example.org/r.git', [], false)).toMatchObject({ ok: false });
  });

  it('judges a literal as it is (nothing to resolve or pin); loopback only when allowed', () => {
    expect(decideHost('http://93.184.215.14/r.git', [], false)).toEqual({ ok: true, resolve: undefined });
    expect(decideHost('http://127.0.0.1:9/r.git', [], false)).toMatchObject({ ok: false, message: /loopback/ });
    expect(decideHost('http://127.0.0.1:9/r.git', [], true)).toEqual({ ok: true, resolve: undefined });
    expect(decideHost('http://[fe80::1]/r.git', [], true)).toMatchObject({ ok: false, message: /link-local/ });
    // localhost is a name like any other: resolved, checked and pinned.
    expect(decideHost('http://localhost:9/r.git', ['127.0.0.1', '::1'], true)).toEqual({
      ok: true,
      resolve: 'localhost:9:127.0.0.1,[::1]',
    });
    expect(decideHost('http://localhost:9/r.git', ['127.0.0.1'], false)).toMatchObject({ ok: false });
  });
});

describe('git invocation', () => {
  it('shuts hooks, other protocols, redirects, credentials and submodules, and pins the checked address', () => {
    const o = gitOptions('h:443:1.2.3.4');
    const pairs = o.filter((_, i) => i % 2 === 1);
    expect(o.filter((_, i) => i % 2 === 0).every((f) => f === '-c')).toBe(true);
    for (const want of [
      'core.hooksPath=/dev/null',
      'protocol.allow=never',
      'protocol.https.allow=always',
      'http.followRedirects=false',
      'credential.helper=',
      'submodule.recurse=false',
      'transfer.fsckObjects=true',
      'http.curloptResolve=h:443:1.2.3.4',
    ])
      expect(pairs).toContain(want);
    expect(gitOptions(undefined).some((kv) => kv.startsWith('http.curloptResolve'))).toBe(false);
  });

  it('runs with an environment built from nothing: no token, no key, no proxy, no user or system config', () => {
    const env = cloneEnv('/usr/bin:/bin');
    expect(Object.keys(env).sort()).toEqual(
      [
        'PATH',
        'HOME',
        'LANG',
        'LC_ALL',
        'GIT_CONFIG_NOSYSTEM',
        'GIT_CONFIG_GLOBAL',
        'GIT_TERMINAL_PROMPT',
        'GIT_ALLOW_PROTOCOL',
        'GIT_PROTOCOL_FROM_USER',
      ].sort(),
    );
    expect(env).toMatchObject({ GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_GLOBAL: '/dev/null', HOME: '/nonexistent' });
  });

  it('fetches exactly the ref (or HEAD) shallowly and checks out what it fetched', () => {
    const steps = cloneSteps({ url: 'https://git.example.org/r.git', ref: 'v1' }, undefined);
    const tails = steps.map((s) => s.slice(s.findIndex((a) => !a.startsWith('-c') && !a.includes('='))));
    expect(tails).toEqual([
      ['init', '--quiet', '--template='],
      ['config', 'core.symlinks', 'false'],
      ['remote', 'add', 'origin', 'https://git.example.org/r.git'],
      ['fetch', '--quiet', '--depth', '1', '--no-tags', '--no-recurse-submodules', 'origin', 'v1'],
      ['checkout', '--quiet', 'FETCH_HEAD'],
    ]);
    expect(cloneSteps({ url: 'https://git.example.org/r.git' }, undefined)[3]?.at(-1)).toBe('HEAD');
    // git gets the URL decideHost judged, even one the contract would have refused: the standard's
    // parse reads `\` as `/` (host allowed.example), libcurl as part of a user name (host 10.0.0.1).
    const url = 'http://allowed.example\\@10.0.0.1/r.git';
    expect(decideHost(url, ['93.184.215.14'], false)).toMatchObject({ ok: true });
    expect(cloneSteps({ url }, undefined)[2]).toEqual([
      'remote',
      'add',
      'origin',
      'http://allowed.example/@10.0.0.1/r.git',
    ]);
  });

  it("reports git's own last fatal line, naming the URL and the ref", () => {
    expect(gitReason("hint: x\nfatal: couldn't find remote ref nope\n")).toBe("couldn't find remote ref nope");
    expect(gitReason('')).toBe('no output');
    expect(cloneError({ url: 'https://g.example/r.git', ref: 'nope' }, 'why')).toEqual({
      code: 'repository_clone_failed',
      message: 'cloning https://g.example/r.git (ref nope) failed: why',
      retryable: true,
    });
    expect(cloneError({ url: 'https://g.example/r.git' }, 'why').message).toContain('its default branch');
  });
});
