import { describe, expect, it } from 'vitest';
import { describeGrants, grantsOf } from '../../src/users/grants.ts';

describe('grantsOf', () => {
  const user = { role: 'user' as const, disabled: 0 };
  const admin = { role: 'admin' as const, disabled: 0 };
  const disabled = { role: 'user' as const, disabled: 1 };

  it('names every part of a change that gives access', () => {
    expect(grantsOf(user, { password: 'a new password!' })).toEqual(['password']);
    expect(grantsOf(user, { role: 'admin' })).toEqual(['role']);
    expect(grantsOf(disabled, { disabled: false })).toEqual(['disabled']);
    expect(grantsOf(disabled, { password: 'a new password!', role: 'admin', disabled: false })).toEqual([
      'password',
      'role',
      'disabled',
    ]);
  });

  it('finds nothing in a change that only takes access away or changes nothing', () => {
    expect(grantsOf(admin, { role: 'user' })).toEqual([]);
    expect(grantsOf(admin, { role: 'admin' })).toEqual([]);
    expect(grantsOf(user, { disabled: true })).toEqual([]);
    expect(grantsOf(user, { disabled: false })).toEqual([]);
  });
});

describe('describeGrants', () => {
  it('names the actions in a sentence', () => {
    expect(describeGrants(['role'])).toBe('making an admin');
    expect(describeGrants(['password', 'role'])).toBe('setting a password and making an admin');
    expect(describeGrants(['password', 'role', 'disabled'])).toBe(
      'setting a password, making an admin and enabling an account',
    );
  });
});
