import { describe, expect, test } from 'vitest';
import { welcomeRestore, type WelcomeBrings } from '../../src/serve/welcome-rule.ts';

// What becomes of a CLI started before the welcome (docs/DESIGN.md "Runner behaviour (serve)").

const nothing: WelcomeBrings = { transcript: false, files: false, repository: false, approvals: 'auto' };

describe('the welcome rule for a CLI started before it', () => {
  test('a welcome that brings nothing keeps it as it is, for both CLIs', () => {
    expect(welcomeRestore('claude', nothing)).toBeUndefined();
    expect(welcomeRestore('pi', nothing)).toBeUndefined();
  });

  test('pi reloads onto a transcript, files or a clone; claude is replaced', () => {
    for (const brings of [
      { transcript: true },
      { files: true },
      { repository: true },
      { transcript: true, files: true },
    ]) {
      expect(welcomeRestore('pi', { ...nothing, ...brings }), JSON.stringify(brings)).toBe('reload');
      expect(welcomeRestore('claude', { ...nothing, ...brings }), JSON.stringify(brings)).toBe('replace');
    }
  });

  test('approval mode ask replaces either CLI: the guard asks only when spawned so', () => {
    expect(welcomeRestore('pi', { ...nothing, approvals: 'ask' })).toBe('replace');
    expect(welcomeRestore('pi', { ...nothing, transcript: true, approvals: 'ask' })).toBe('replace');
    expect(welcomeRestore('claude', { ...nothing, approvals: 'ask' })).toBe('replace');
  });
});
