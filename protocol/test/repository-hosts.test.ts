import { describe, expect, it } from 'vitest';
import {
  addressAllowed,
  checkRepositoryHost,
  classifyAddress,
  classifyHost,
  hostMatches,
  RepositoryHostPatternSchema,
  RepositorySchema,
} from '../src/index.ts';

describe('repository host policy', () => {
  it('classifies addresses: loopback, private, link-local and the rest of the non-public ranges, v4 and v6', () => {
    const cases: Array<[string, string | undefined]> = [
      ['127.0.0.1', 'loopback'],
      ['127.9.8.7', 'loopback'],
      ['::1', 'loopback'],
      ['[::1]', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'private'],
      ['169.254.170.2', 'private'],
      ['100.64.0.1', 'private'],
      ['0.0.0.0', 'private'],
      ['224.0.0.1', 'private'],
      ['255.255.255.255', 'private'],
      ['fe80::1', 'private'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['::', 'private'],
      ['ff02::1', 'private'],
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:169.254.169.254', 'private'],
      ['64:ff9b::a00:1', 'private'],
      ['2002:a00:1::', 'private'],
      ['93.184.215.14', 'public'],
      ['172.32.0.1', 'public'],
      ['2606:4700::1111', 'public'],
      ['::ffff:93.184.215.14', 'public'],
      ['not-an-address', undefined],
    ];
    for (const [address, want] of cases)
      expect({ address, got: classifyAddress(address) }).toEqual({ address, got: want });
  });

  it('classifies URL hosts: literals, localhost names, and names only resolving can judge', () => {
    const host = (url: string) => classifyHost(new URL(url).hostname);
    expect(host('http://127.0.0.1:8080/r.git')).toBe('loopback');
    expect(host('http://2130706433/r.git')).toBe('loopback');
    expect(host('http://0x7f.1/r.git')).toBe('loopback');
    expect(host('http://[::1]/r.git')).toBe('loopback');
    expect(host('http://[::ffff:7f00:1]/r.git')).toBe('loopback');
    expect(host('http://localhost/r.git')).toBe('loopback');
    expect(host('http://LOCALHOST./r.git')).toBe('loopback');
    expect(host('http://git.localhost/r.git')).toBe('loopback');
    expect(host('http://169.254.169.254/latest')).toBe('private');
    expect(host('http://[fe80::1]/r.git')).toBe('private');
    expect(host('http://[fd00::1]/r.git')).toBe('private');
    expect(host('https://203.0.113.9/r.git')).toBe('private');
    expect(host('https://93.184.215.14/r.git')).toBe('public');
    expect(host('https://git.example.org/r.git')).toBe('name');
  });

  it('allows public addresses always, loopback only when the deployment says so, private never', () => {
    expect(addressAllowed('public', false)).toBe(true);
    expect(addressAllowed('loopback', false)).toBe(false);
    expect(addressAllowed('loopback', true)).toBe(true);
    expect(addressAllowed('private', true)).toBe(false);
  });

  it('matches allow-list entries: exact names, `*.domain` subdomains only, `*` everything', () => {
    expect(hostMatches('*', 'anything.example')).toBe(true);
    expect(hostMatches('git.example.org', 'git.example.org')).toBe(true);
    expect(hostMatches('git.example.org', 'git.example.org.')).toBe(true);
    expect(hostMatches('git.example.org', 'xgit.example.org')).toBe(false);
    expect(hostMatches('*.example.org', 'a.example.org')).toBe(true);
    expect(hostMatches('*.example.org', 'a.b.example.org')).toBe(true);
    expect(hostMatches('*.example.org', 'example.org')).toBe(false);
    expect(hostMatches('*.example.org', 'badexample.org')).toBe(false);
    expect(hostMatches('*.example.org', 'example.org.evil.test')).toBe(false);
    for (const good of ['*', '*.example.org', 'git.example.org', '203.0.113.9', '[2001:db8::1]'])
      expect(RepositoryHostPatternSchema.safeParse(good).success).toBe(true);
    for (const bad of ['', 'Git.Example.org', '*example.org', 'a.*.org', 'http://x', 'x/y', 'x:80', '**'])
      expect({ bad, ok: RepositoryHostPatternSchema.safeParse(bad).success }).toEqual({ bad, ok: false });
  });

  it('judges a repository URL: address rule first, then the allow-list, each with its own message', () => {
    const anyPublicHost = { hosts: ['*'], allowLoopback: false };
    expect(checkRepositoryHost('https://git.example.org/r.git', anyPublicHost)).toEqual({ ok: true });
    expect(checkRepositoryHost('http://127.0.0.1:9/r.git', anyPublicHost)).toMatchObject({
      ok: false,
      message: /loopback/,
    });
    expect(checkRepositoryHost('http://127.0.0.1:9/r.git', { ...anyPublicHost, allowLoopback: true })).toEqual({
      ok: true,
    });
    expect(checkRepositoryHost('http://[fe80::1]/r.git', { ...anyPublicHost, allowLoopback: true })).toMatchObject({
      ok: false,
      message: /private, link-local/,
    });
    const one = { hosts: ['*.example.org'], allowLoopback: true };
    expect(checkRepositoryHost('https://a.example.org/r.git', one)).toEqual({ ok: true });
    expect(checkRepositoryHost('http://127.0.0.1:9/r.git', one)).toMatchObject({
      ok: false,
      message: /not an allowed/,
    });
    expect(checkRepositoryHost('https://a.example.org/r.git', { hosts: [], allowLoopback: false })).toMatchObject({
      ok: false,
      message: /turned off/,
    });
  });

  it('refuses URL shapes that are not plain http(s) (the contract RepositorySchema)', () => {
    for (const url of [
      'git@example.org:r.git',
      'ssh://example.org/r.git',
      'file:///etc',
      'ext::sh -c id',
      'https://user:pw@example.org/r.git',
      'https://example.org/r.git#frag',
      'not a url',
    ])
      expect({ url, ok: RepositorySchema.safeParse({ url }).success }).toEqual({ url, ok: false });
    // What the URL standard repairs and git's libcurl reads otherwise; the message gives the form that passes.
    for (const [url, issue] of [
      ['http://allowed.example\\@10.0.0.1/r.git', 'must be written as http://allowed.example/@10.0.0.1/r.git'],
      ['http://allowed.example\t@10.0.0.1/r.git', 'must not carry credentials'],
      [' https://example.org/r.git', 'must be written as https://example.org/r.git'],
      ['https://Example.org/r.git', 'must be written as https://example.org/r.git'],
      ['https://example.org', 'must be written as https://example.org/'],
    ] as const)
      expect({ url, issues: RepositorySchema.safeParse({ url }).error?.issues.map((i) => i.message) }).toEqual({
        url,
        issues: [issue],
      });
    expect(RepositorySchema.safeParse({ url: 'https://example.org/a%20b/r.git' }).success).toBe(true);
    for (const ref of ['-upload-pack=x', 'a..b', 'main/', 'x.lock', 'HEAD~1', 'a b'])
      expect({ ref, ok: RepositorySchema.safeParse({ url: 'https://example.org/r.git', ref }).success }).toEqual({
        ref,
        ok: false,
      });
  });
});
