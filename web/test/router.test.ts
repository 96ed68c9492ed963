import { describe, expect, it } from 'vitest';
import { parseRoute, safeNext } from '../src/router.ts';

describe('routes', () => {
  it('maps every page', () => {
    expect(parseRoute('/', '')).toEqual({ page: 'home' });
    expect(parseRoute('/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV', '')).toEqual({
      page: 'session',
      id: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    });
    expect(parseRoute('/tokens', '')).toEqual({ page: 'tokens' });
    expect(parseRoute('/account', '')).toEqual({ page: 'account' });
    expect(parseRoute('/admin', '')).toEqual({ page: 'admin', tab: 'users' });
    expect(parseRoute('/admin/audit', '')).toEqual({ page: 'admin', tab: 'audit' });
    expect(parseRoute('/admin/limits', '')).toEqual({ page: 'admin', tab: 'limits' });
    expect(parseRoute('/signin', '?next=%2Fsessions%2Fx')).toEqual({ page: 'signin', next: '/sessions/x' });
    expect(parseRoute('/sessions/not-an-id', '')).toEqual({ page: 'not-found', path: '/sessions/not-an-id' });
    expect(parseRoute('/admin/nope', '')).toEqual({ page: 'not-found', path: '/admin/nope' });
  });

  it('follows only same-site paths after sign-in (no open redirect)', () => {
    expect(safeNext('/tokens')).toBe('/tokens');
    expect(safeNext('/sessions/x?tab=files#end')).toBe('/sessions/x?tab=files#end');
    for (const bad of [
      null,
      'https://evil.example/',
      '//evil.example/x',
      // What the browser reads as //evil.example: a backslash for a slash, a tab it drops.
      '/\\evil.example/x',
      '/\t/evil.example',
      'javascript:alert(1)',
      '/signin?next=/x',
      '',
    ]) {
      expect(safeNext(bad)).toBe('/');
    }
  });
});
