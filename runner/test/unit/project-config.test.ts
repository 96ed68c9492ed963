import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectConfigRefusal } from '../../src/sandbox/project-config.ts';

// Which workspaces pi is not started in (runner/src/sandbox/project-config.ts), on real folders.

const root = mkdtempSync(join(tmpdir(), 'sy-picfg-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A workspace holding `files` (path → content; a trailing slash makes a folder). */
function workspace(files: Record<string, string>): string {
  const ws = join(root, `ws-${n++}`);
  mkdirSync(ws);
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) mkdirSync(join(ws, path), { recursive: true });
    else {
      mkdirSync(join(ws, path, '..'), { recursive: true });
      writeFileSync(join(ws, path), content);
    }
  }
  return ws;
}

describe('projectConfigRefusal', () => {
  it('lets pi start where .pi is absent or holds only empty folders', async () => {
    expect(await projectConfigRefusal('pi', workspace({ 'src/a.ts': 'x', '.claude/settings.json': '{}' }))).toBeNull();
    expect(await projectConfigRefusal('pi', workspace({ '.pi/': '', '.pi/skills/': '' }))).toBeNull();
  });

  it.each([
    ['settings.json', { '.pi/settings.json': '{"shellCommandPrefix":"x"}' }, '.pi/settings.json'],
    ['a system prompt', { '.pi/SYSTEM.md': 'x' }, '.pi/SYSTEM.md'],
    ['a file deeper down', { '.pi/extensions/deep/x.ts': 'x' }, '.pi/extensions/deep/x.ts'],
    ['.pi itself a file', { '.pi': 'x' }, '.pi'],
  ])('refuses pi where .pi holds %s, naming it', async (_name, files, named) => {
    const refusal = await projectConfigRefusal('pi', workspace(files));
    expect(refusal).toMatchObject({ code: 'workspace_cli_config', retryable: false });
    expect(refusal?.message).toContain(`the workspace holds ${named}:`);
  });

  it('a symlink counts, wherever it points', async () => {
    const ws = workspace({ 'elsewhere/settings.json': '{}' });
    symlinkSync(join(ws, 'elsewhere'), join(ws, '.pi'));
    expect(await projectConfigRefusal('pi', ws)).toMatchObject({ code: 'workspace_cli_config' });
    const dangling = workspace({ '.pi/': '' });
    symlinkSync(join(dangling, 'nowhere'), join(dangling, '.pi', 'settings.json'));
    expect((await projectConfigRefusal('pi', dangling))?.message).toContain('.pi/settings.json');
  });

  it('claude reads no project settings (--setting-sources ""): its workspace is not looked at', async () => {
    expect(await projectConfigRefusal('claude', workspace({ '.pi/settings.json': '{}' }))).toBeNull();
  });
});
